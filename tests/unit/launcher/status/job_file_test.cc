// Unit tests of the run directory's job file and token file: written private, read back only
// from a directory and a file of the caller's.
#include "launcher/status/job_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/unique_fd.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;

UniqueFd OpenDir(const std::string& path) {
  return UniqueFd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

TEST(JobFileTest, WrittenJobReadsBackPrivate) {
  testing::TempDir dir;
  JobFile job;
  job.run_id = "r1";
  job.store_endpoint = "10.0.0.1:29500";
  job.machine_rank = 1;
  job.num_machines = 3;
  job.launcher_pid = 4242;
  ASSERT_TRUE(WriteJobFile(OpenDir(dir.path()).get(), dir.path(), job).ok());
  absl::StatusOr<JobFile> back = ReadJobFile(dir.path());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->run_id, "r1");
  EXPECT_EQ(back->store_endpoint, "10.0.0.1:29500");
  EXPECT_EQ(back->machine_rank, 1);
  EXPECT_EQ(back->num_machines, 3);
  EXPECT_EQ(back->tls_ca_file, "");
  EXPECT_EQ(back->launcher_pid, 4242);
  EXPECT_EQ(back->run_dir, dir.path());
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() + "/job").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_THAT(testing::ReadFile(dir.path() + "/job"), ::testing::Not(HasSubstr("token")));
}

TEST(JobFileTest, MissingAndDamagedFilesAreNamed) {
  testing::TempDir dir;
  EXPECT_TRUE(absl::IsNotFound(ReadJobFile(dir.path()).status()));
  dir.Write("bad/job", "run_id=r\nstore_endpoint=h:1\nlauncher_pid=x\n");
  absl::Status s = ReadJobFile(dir.path() + "/bad").status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr(":3: cannot read 'launcher_pid=x'"));
  dir.Write("partial/job", "run_id=r\n");
  EXPECT_THAT(ReadJobFile(dir.path() + "/partial").status().message(),
              HasSubstr("store_endpoint missing"));
}

// What another user could plant is never read: a job file others may write, a symlink for the
// job file or for the run directory, a run directory others may write.
TEST(JobFileTest, PlantedJobFilesAreRefused) {
  testing::TempDir dir;
  const std::string job = dir.Write("open/job", "run_id=r\nstore_endpoint=h:1\n");
  ASSERT_EQ(::chmod(job.c_str(), 0666), 0);
  EXPECT_THAT(ReadJobFile(dir.path() + "/open").status().message(), HasSubstr("mode 0666"));
  dir.Write("target/job", "run_id=r\nstore_endpoint=h:1\n");
  ASSERT_EQ(::mkdir((dir.path() + "/link").c_str(), 0700), 0);
  ASSERT_EQ(::symlink((dir.path() + "/target/job").c_str(), (dir.path() + "/link/job").c_str()), 0);
  EXPECT_TRUE(absl::IsPermissionDenied(ReadJobFile(dir.path() + "/link").status()));
  ASSERT_EQ(::symlink((dir.path() + "/target").c_str(), (dir.path() + "/dirlink").c_str()), 0);
  EXPECT_THAT(ReadJobFile(dir.path() + "/dirlink").status().message(),
              HasSubstr("a symbolic link"));
  ASSERT_EQ(::chmod((dir.path() + "/target").c_str(), 0777), 0);
  EXPECT_THAT(ReadJobFile(dir.path() + "/target").status().message(), HasSubstr("mode 0777"));
  EXPECT_TRUE(ReadJobFile(dir.path() + "/target").status().message().find("run directory") == 0);
}

TEST(JobFileTest, TheTokenIsTheOwnersOnlyAndReadBackOnlyWhenPrivate) {
  testing::TempDir dir;
  ASSERT_TRUE(WriteJobToken(OpenDir(dir.path()).get(), dir.path(), "s3cret").ok());
  const std::string path = dir.path() + "/token";
  EXPECT_EQ(testing::ReadFile(path), "s3cret\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  absl::StatusOr<std::string> back = ReadJobToken(dir.path());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, "s3cret");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  EXPECT_TRUE(absl::IsPermissionDenied(ReadJobToken(dir.path()).status()));
}

TEST(JobFileTest, OnlyTheCallersOwnProcessCountsAsARunningLauncher) {
  EXPECT_TRUE(OwnLauncherRunning(::getpid()));
  EXPECT_FALSE(OwnLauncherRunning(0));
  EXPECT_FALSE(OwnLauncherRunning(-1));
  EXPECT_FALSE(OwnLauncherRunning(1 << 30));  // no such process
  // pid 1 is root's: it runs, but it is only "ours" when we are root.
  EXPECT_EQ(OwnLauncherRunning(1), ::geteuid() == 0);
}

}  // namespace
}  // namespace accel::launcher
