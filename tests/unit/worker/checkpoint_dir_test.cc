// checkpoint_dir: one writer per directory, stale leftovers cleared, and a promotion that never
// leaves the last complete checkpoint without a copy.
#include "worker/src/checkpoint_dir.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/testing/files.h"

namespace accel::worker {
namespace {

namespace fs = std::filesystem;

// Writes a checkpoint directory whose meta file says `steps`.
void WriteCheckpoint(const fs::path& dir, const std::string& steps) {
  fs::create_directories(dir);
  std::ofstream(dir / kCheckpointMeta) << steps;
}

std::string Steps(const fs::path& dir) {
  return testing::ReadFile((dir / kCheckpointMeta).string());
}

TEST(CheckpointDirTest, ExactlyOneWriterPerDirectoryAndANewNonceIsANewElection) {
  testing::TempDir temp;
  const CheckpointPaths shared(temp.path() + "/ck");
  EXPECT_TRUE(ClaimWriter(shared, 7));
  EXPECT_FALSE(ClaimWriter(shared, 7));  // another machine's local main, same directory
  EXPECT_FALSE(ClaimWriter(shared, 7));
  const CheckpointPaths own(temp.path() + "/other/ck");
  EXPECT_TRUE(ClaimWriter(own, 7));     // a directory of its own
  EXPECT_TRUE(ClaimWriter(shared, 8));  // a crashed save's claim does not block the next save
}

TEST(CheckpointDirTest, ClearStaleKeepsOnlyThisSavesClaim) {
  testing::TempDir temp;
  const CheckpointPaths paths(temp.path() + "/ck");
  ASSERT_TRUE(ClaimWriter(paths, 1));
  std::ofstream(paths.tmp / "model_0.pt") << "half written";
  ASSERT_TRUE(ClaimWriter(paths, 2));
  ClearStale(paths, 2);
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(paths.tmp)) {
    left.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(left, std::vector<std::string>{".writer.2"});
  DropClaim(paths, 2);
  EXPECT_TRUE(fs::is_empty(paths.tmp));
}

TEST(CheckpointDirTest, PromoteKeepsThePreviousCheckpointUntilDropOld) {
  testing::TempDir temp;
  const CheckpointPaths paths(temp.path() + "/ck");
  WriteCheckpoint(paths.final_dir, "10");
  WriteCheckpoint(paths.tmp, "20");
  Promote(paths);
  EXPECT_EQ(Steps(paths.final_dir), "20");
  EXPECT_EQ(Steps(paths.old), "10");
  EXPECT_FALSE(fs::exists(paths.tmp));
  EXPECT_EQ(CheckpointCandidates(paths), (std::vector<fs::path>{paths.final_dir, paths.old}));
  DropOld(paths);
  EXPECT_FALSE(fs::exists(paths.old));
}

// DropOld removes a whole tree (libaccel's own removal, not std::filesystem::remove_all) and
// never follows a symbolic link out of it; a missing "<dir>.old" is nothing to do.
TEST(CheckpointDirTest, DropOldRemovesTheTreeButNotWhatItsLinksPointTo) {
  testing::TempDir temp;
  const CheckpointPaths paths(temp.path() + "/ck");
  DropOld(paths);  // no "<dir>.old" yet
  WriteCheckpoint(paths.old / "model" / "shard", "5");
  std::ofstream(paths.old / "rank_0.pt") << "x";
  const fs::path outside = fs::path(temp.path()) / "outside";
  WriteCheckpoint(outside, "7");
  fs::create_directory_symlink(outside, paths.old / "link");
  DropOld(paths);
  EXPECT_FALSE(fs::exists(paths.old));
  EXPECT_EQ(Steps(outside), "7") << "a link was followed";
}

// What a crash between the two renames leaves: only "<dir>.old". It is the last good
// checkpoint: loadable, and the next promotion must not remove it before "<dir>" exists.
TEST(CheckpointDirTest, AnOldOnlyCheckpointIsACandidateAndSurvivesTheNextPromote) {
  testing::TempDir temp;
  const CheckpointPaths paths(temp.path() + "/ck");
  WriteCheckpoint(paths.old, "10");
  EXPECT_EQ(CheckpointCandidates(paths), std::vector<fs::path>{paths.old});
  WriteCheckpoint(paths.tmp, "20");
  Promote(paths);
  EXPECT_EQ(Steps(paths.final_dir), "20");
  EXPECT_EQ(Steps(paths.old), "10");
}

TEST(CheckpointDirTest, ADirectoryWithoutItsMetaFileIsNoCheckpoint) {
  testing::TempDir temp;
  const CheckpointPaths paths(temp.path() + "/ck");
  fs::create_directories(paths.final_dir);
  EXPECT_TRUE(CheckpointCandidates(paths).empty());
}

}  // namespace
}  // namespace accel::worker
