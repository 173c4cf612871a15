// The run directory's place and modes: XDG_RUNTIME_DIR when usable, else a fresh mkdtemp under
// TMPDIR; log_dir/<run_id> made private or refused; `status` finds what a launch made.
#include "launcher/status/run_dir.h"

#include <sys/stat.h>

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

TEST(RunDirTest, WithoutXdgAFreshDirectoryUnderTmpdirThatStatusFinds) {
  testing::TempDir tmp;
  RunDirPlace place;
  place.run_id = "r7";
  place.machine_rank = 1;
  const EnvLookup env = Env({{"TMPDIR", tmp.path()}});
  // Someone made the predictable name first, open to all: not used, no effect.
  ASSERT_EQ(::mkdir((tmp.path() + "/accel-r7-m1").c_str(), 0777), 0);
  absl::StatusOr<RunDir> a = CreateRunDir(place, env);
  absl::StatusOr<RunDir> b = CreateRunDir(place, env);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_THAT(a->path, StartsWith(tmp.path() + "/accel-r7-m1-"));
  EXPECT_NE(a->path, b->path);
  EXPECT_TRUE(a->scratch);
  EXPECT_EQ(ModeOf(a->path), 0700u);
  EXPECT_EQ(RunDirCandidates("", "r7", env).size(), 3u) << "the caller checks each one's owner";
}

TEST(RunDirTest, XdgRuntimeDirIsUsedOnlyWhenItIsPrivate) {
  testing::TempDir tmp;
  testing::TempDir xdg;
  RunDirPlace place;
  place.run_id = "r8";
  const EnvLookup env = Env({{"TMPDIR", tmp.path()}, {"XDG_RUNTIME_DIR", xdg.path()}});
  absl::StatusOr<RunDir> dir = CreateRunDir(place, env);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(dir->path, xdg.path() + "/accel-r8-m0");
  EXPECT_EQ(ModeOf(dir->path), 0700u);
  EXPECT_THAT(ScratchRoots(env), ElementsAre(xdg.path(), tmp.path()));
  EXPECT_THAT(RunDirCandidates("", "r8", env), ElementsAre(dir->path));
  ASSERT_EQ(::chmod(xdg.path().c_str(), 0755), 0);  // not private: TMPDIR instead
  EXPECT_THAT(ScratchRoots(env), ElementsAre(tmp.path()));
  absl::StatusOr<RunDir> fallback = CreateRunDir(place, env);
  ASSERT_TRUE(fallback.ok());
  EXPECT_THAT(fallback->path, StartsWith(tmp.path() + "/accel-r8-m0-"));
  EXPECT_THAT(ScratchRoots(Env({{"XDG_RUNTIME_DIR", "relative"}})), ElementsAre("/tmp"));
}

TEST(RunDirTest, LogDirRunDirectoryIsPrivateAndAPlantedOneIsRefused) {
  testing::TempDir logs;
  RunDirPlace place;
  place.log_dir = logs.path() + "/new/logs";
  place.run_id = "r9";
  absl::StatusOr<RunDir> dir = CreateRunDir(place, Env({}));
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_FALSE(dir->scratch);
  EXPECT_EQ(ModeOf(place.log_dir + "/r9"), 0700u);
  EXPECT_TRUE(CreateRunDir(place, Env({})).ok()) << "our own, reused (a restart with the id)";
  place.log_mode = "group";
  EXPECT_THAT(CreateRunDir(place, Env({})).status().message(), HasSubstr("mode 0700, not 0750"));
  place.run_id = "planted";
  ASSERT_EQ(::mkdir((place.log_dir + "/planted").c_str(), 0777), 0);
  ASSERT_EQ(::chmod((place.log_dir + "/planted").c_str(), 0777), 0);
  absl::StatusOr<RunDir> refused = CreateRunDir(place, Env({}));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("mode 0777"));
  EXPECT_EQ(RunDirMode("group"), 0750u);
  EXPECT_EQ(LogFileMode("private"), 0600u);
}

}  // namespace
}  // namespace accel::launcher
