// common/safe_file.h and safe_open.h: private directories made or refused, new files never
// through a symlink or into a planted file, files read only when the caller's.
#include "common/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/safe_open.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/files.h"

namespace accel {
namespace {

using ::testing::HasSubstr;

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

TEST(SafeFileTest, MakeOwnDirMakesAPrivateDirectoryWhateverTheUmask) {
  testing::TempDir dir;
  const mode_t old = ::umask(0);
  absl::StatusOr<UniqueFd> made = MakeOwnDir(dir.path() + "/run", 0700);
  ::umask(old);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(ModeOf(dir.path() + "/run"), 0700u);
  EXPECT_TRUE(MakeOwnDir(dir.path() + "/run", 0700).ok()) << "our own, reused";
}

// Every mode other than the one asked for, a symlink and a file are refused, saying why.
TEST(SafeFileTest, MakeOwnDirRefusesAnExistingDirectoryThatIsNotExactlyOurs) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/run";
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  for (mode_t mode : {0777u, 0755u, 0750u, 0701u, 0710u, 0770u, 01777u, 0500u}) {
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
    absl::StatusOr<UniqueFd> fd = MakeOwnDir(path, 0700);
    EXPECT_EQ(fd.status().code(), absl::StatusCode::kFailedPrecondition) << std::oct << mode;
    EXPECT_THAT(fd.status().message(), HasSubstr("refused"));
  }
  ASSERT_EQ(::chmod(path.c_str(), 0750), 0);
  EXPECT_TRUE(MakeOwnDir(path, 0750).ok()) << "log_mode group";
  const std::string link = dir.path() + "/link";
  ASSERT_EQ(::symlink(path.c_str(), link.c_str()), 0);
  EXPECT_THAT(MakeOwnDir(link, 0750).status().message(), HasSubstr("a symbolic link"));
  const std::string file = dir.Write("file", "x");
  EXPECT_THAT(MakeOwnDir(file, 0700).status().message(), HasSubstr("not a directory"));
}

TEST(SafeFileTest, NewFilesAreNeverCreatedThroughASymlinkOrIntoAPlantedFile) {
  testing::TempDir dir;
  absl::StatusOr<UniqueFd> run = MakeOwnDir(dir.path() + "/run", 0700);
  ASSERT_TRUE(run.ok());
  const std::string victim = dir.Write("victim", "precious\n");
  ASSERT_EQ(::symlink(victim.c_str(), (dir.path() + "/run/stdout.log").c_str()), 0);
  absl::StatusOr<UniqueFd> no =
      CreateFileAt(run->get(), "stdout.log", O_WRONLY, 0600, /*replace=*/false, "stdout.log");
  EXPECT_EQ(no.status().code(), absl::StatusCode::kAlreadyExists);
  // replace: the symlink itself is removed, the file it names is untouched.
  absl::StatusOr<UniqueFd> yes =
      CreateFileAt(run->get(), "stdout.log", O_WRONLY, 0600, /*replace=*/true, "stdout.log");
  ASSERT_TRUE(yes.ok()) << yes.status();
  ASSERT_EQ(::write(yes->get(), "log\n", 4), 4);
  EXPECT_EQ(testing::ReadFile(victim), "precious\n");
  EXPECT_EQ(ModeOf(dir.path() + "/run/stdout.log"), 0600u);
  // Append files (step_times.csv): a symlink is refused.
  ASSERT_EQ(::symlink(victim.c_str(), (dir.path() + "/run/steps.csv").c_str()), 0);
  EXPECT_FALSE(OpenAppendAt(run->get(), "steps.csv", 0600, "steps.csv").ok());
  EXPECT_EQ(testing::ReadFile(victim), "precious\n");
}

TEST(SafeFileTest, WriteFileAtReplacesByRenameAndReadOwnFileAtChecksTheOwner) {
  testing::TempDir dir;
  absl::StatusOr<UniqueFd> run = MakeOwnDir(dir.path() + "/run", 0700);
  ASSERT_TRUE(run.ok());
  const std::string victim = dir.Write("victim", "precious\n");
  ASSERT_EQ(::symlink(victim.c_str(), (dir.path() + "/run/job").c_str()), 0);
  ASSERT_TRUE(WriteFileAt(run->get(), "job", "run_id=r\n", 0600, "job").ok());
  EXPECT_EQ(testing::ReadFile(victim), "precious\n");
  EXPECT_EQ(testing::ReadFile(dir.path() + "/run/job"), "run_id=r\n");
  absl::StatusOr<std::string> back = ReadOwnFileAt(run->get(), "job", true, 100, "job");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, "run_id=r\n");
  EXPECT_FALSE(ReadOwnFileAt(run->get(), "job", true, 4, "job").ok()) << "larger than the cap";
  ASSERT_EQ(::symlink(victim.c_str(), (dir.path() + "/run/token").c_str()), 0);
  EXPECT_THAT(ReadOwnFileAt(run->get(), "token", true, 100, "token").status().message(),
              HasSubstr("a symbolic link"));
  ASSERT_EQ(::mkfifo((dir.path() + "/run/fifo").c_str(), 0600), 0);
  EXPECT_THAT(ReadOwnFileAt(run->get(), "fifo", true, 100, "fifo").status().message(),
              HasSubstr("not a regular file"))
      << "a planted FIFO does not block the reader";
  ASSERT_EQ(::link(victim.c_str(), (dir.path() + "/run/hard").c_str()), 0);
  EXPECT_THAT(ReadOwnFileAt(run->get(), "hard", false, 100, "hard").status().message(),
              HasSubstr("hard links"));
}

TEST(SafeFileTest, MakeDirsAtRefusesASymlinkOnTheWay) {
  testing::TempDir dir;
  absl::StatusOr<UniqueFd> run = MakeOwnDir(dir.path() + "/run", 0700);
  ASSERT_TRUE(run.ok());
  absl::StatusOr<UniqueFd> rank = MakeDirsAt(run->get(), "attempt_0/rank_1", 0700, "run");
  ASSERT_TRUE(rank.ok()) << rank.status();
  EXPECT_EQ(ModeOf(dir.path() + "/run/attempt_0/rank_1"), 0700u);
  ASSERT_EQ(::mkdir((dir.path() + "/elsewhere").c_str(), 0700), 0);
  ASSERT_EQ(::symlink((dir.path() + "/elsewhere").c_str(), (dir.path() + "/run/attempt_1").c_str()),
            0);
  EXPECT_THAT(MakeDirsAt(run->get(), "attempt_1/rank_0", 0700, "run").status().message(),
              HasSubstr("a symbolic link"));
  EXPECT_EQ(ModeOf(dir.path() + "/elsewhere/rank_0"), 0u) << "nothing made through the link";
}

TEST(SafeOpenTest, ReplaceFileNeverWritesThroughAPlantedTemporaryFile) {
  testing::TempDir dir;
  const std::string victim = dir.Write("victim", "precious\n");
  const std::string path = dir.path() + "/error.json";
  // The old name pattern (<path>.tmp, <path>.tmp.<pid>) planted as symlinks: not used.
  ASSERT_EQ(::symlink(victim.c_str(), (path + ".tmp").c_str()), 0);
  ASSERT_EQ(::symlink(victim.c_str(), (path + ".tmp." + std::to_string(::getpid())).c_str()), 0);
  EXPECT_EQ(safe_open::ReplaceFile(path, "{}\n", 0600), 0);
  EXPECT_EQ(testing::ReadFile(path), "{}\n");
  EXPECT_EQ(testing::ReadFile(victim), "precious\n");
  EXPECT_EQ(ModeOf(path), 0600u);
}

}  // namespace
}  // namespace accel
