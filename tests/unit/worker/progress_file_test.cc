// Unit tests of the progress file's collective time: what the training thread waits for counts,
// collectives overlapping backward on another thread do not, nested waits count once.
#include "worker/src/progress_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "accel/error.h"
#include "common/progress_record.h"
#include "gtest/gtest.h"
#include "tests/testing/files.h"

namespace accel::worker {
namespace {

using Clock = std::chrono::steady_clock;

progress::Record Read(const std::string& path) {
  const std::string bytes = testing::ReadFile(path);
  return progress::DecodeRecord(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

std::uint64_t Nanos(Clock::duration d) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

TEST(ProgressFileTest, CollectiveOnTheTrainingThreadIsTimed) {
  testing::TempDir dir;
  ProgressFile file(dir.path() + "/progress");
  const auto start = Clock::now();
  file.CollectiveStarted();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  file.CollectiveDone();
  const std::uint64_t wall = Nanos(Clock::now() - start);
  const progress::Record r = Read(dir.path() + "/progress");
  ASSERT_TRUE(r.has_timing);
  EXPECT_EQ(r.collectives_started, 1u);
  EXPECT_EQ(r.collectives_done, 1u);
  EXPECT_GE(r.collective_ns, 20'000'000u);
  EXPECT_LE(r.collective_ns, wall);
}

TEST(ProgressFileTest, CollectiveOnAnOverlapThreadIsCountedNotTimed) {
  testing::TempDir dir;
  ProgressFile file(dir.path() + "/progress");
  std::thread comm([&] {
    ProgressFile::MarkOverlapThread();
    file.CollectiveStarted();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    file.CollectiveDone();
  });
  comm.join();
  const progress::Record r = Read(dir.path() + "/progress");
  EXPECT_EQ(r.collectives_started, 1u);
  EXPECT_EQ(r.collectives_done, 1u);
  EXPECT_EQ(r.collective_ns, 0u);
}

TEST(ProgressFileTest, NestedWaitsCountOnce) {
  testing::TempDir dir;
  ProgressFile file(dir.path() + "/progress");
  const auto start = Clock::now();
  file.WaitStarted();  // DDP's end of backward
  file.CollectiveStarted();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  file.CollectiveDone();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  file.WaitDone();
  const std::uint64_t wall = Nanos(Clock::now() - start);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));  // own work: not counted
  const progress::Record r = Read(dir.path() + "/progress");
  EXPECT_GE(r.collective_ns, 20'000'000u);
  EXPECT_LE(r.collective_ns, wall);  // counted twice would exceed the wall time
}

TEST(ProgressFileTest, SamplesAddUp) {
  testing::TempDir dir;
  ProgressFile file(dir.path() + "/progress");
  file.AddSamples(16);
  file.AddSamples(0);
  file.AddSamples(-3);
  file.AddSamples(8);
  file.Write(7);
  const progress::Record r = Read(dir.path() + "/progress");
  EXPECT_EQ(r.samples, 24u);
  EXPECT_EQ(r.step, 7u);
}

TEST(ProgressFileTest, WaitInProgressSaysWhenItBegan) {
  testing::TempDir dir;
  ProgressFile file(dir.path() + "/progress");
  EXPECT_EQ(Read(dir.path() + "/progress").wait_since_ns, 0u);
  const std::uint64_t before = Nanos(Clock::now().time_since_epoch());
  file.WaitStarted();
  const std::uint64_t after = Nanos(Clock::now().time_since_epoch());
  const progress::Record waiting = Read(dir.path() + "/progress");
  EXPECT_GE(waiting.wait_since_ns, before);
  EXPECT_LE(waiting.wait_since_ns, after);
  EXPECT_EQ(waiting.collective_ns, 0u);  // added when the wait ends
  file.WaitDone();
  const progress::Record done = Read(dir.path() + "/progress");
  EXPECT_EQ(done.wait_since_ns, 0u);
  EXPECT_GT(done.collective_ns, 0u);
}

// The file is created new and private: never through a symlink someone planted (the file it
// names is untouched), never into another's file; a leftover of our own is replaced.
TEST(ProgressFileTest, CreatedNewPrivateAndNeverThroughASymlink) {
  testing::TempDir dir;
  const std::string victim = dir.Write("victim", "precious\n");
  const std::string path = dir.path() + "/progress";
  ASSERT_EQ(::symlink(victim.c_str(), path.c_str()), 0);
  EXPECT_THROW(ProgressFile file(path), Error);
  EXPECT_EQ(testing::ReadFile(victim), "precious\n");
  ASSERT_EQ(::unlink(path.c_str()), 0);
  { ProgressFile file(path); }
  { ProgressFile again(path); }  // our own leftover: replaced
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

}  // namespace
}  // namespace accel::worker
