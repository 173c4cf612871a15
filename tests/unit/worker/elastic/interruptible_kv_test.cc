// MakeInterruptibleKv (worker/src/store/kv.h): a regroup's store wait ends within a slice of a
// newer generation, and otherwise behaves as the store's own Get.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "accel/error.h"
#include "tests/testing/files.h"
#include "worker/src/store/kv.h"

namespace accel::worker {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(InterruptibleKvTest, ANewerGenerationEndsAWaitForAKeyThatNeverComes) {
  accel::testing::TempDir dir;
  std::atomic<bool> newer{false};
  auto kv = MakeInterruptibleKv(
      MakeFileKv(dir.path(), "ns"),
      [&newer]() -> std::string { return newer ? "generation 2 replaced generation 1" : ""; },
      milliseconds(50));
  std::thread later([&newer] {
    std::this_thread::sleep_for(milliseconds(300));
    newer = true;
  });
  const auto start = Clock::now();
  try {
    kv->Get("pg0/g1/shm/host/6", milliseconds(60000));
    ADD_FAILURE() << "a key nobody writes was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("generation 2 replaced generation 1"), std::string::npos)
        << e.what();
  }
  later.join();
  EXPECT_LT(SecondsSince(start), 5.0);  // not the 60 s deadline
}

TEST(InterruptibleKvTest, AKeySetWhileWaitingIsReadAndTheDeadlineStillHolds) {
  accel::testing::TempDir dir;
  auto kv = MakeInterruptibleKv(
      MakeFileKv(dir.path(), "ns"), [] { return std::string(); }, milliseconds(50));
  std::thread writer([&dir] {
    std::this_thread::sleep_for(milliseconds(200));
    MakeFileKv(dir.path(), "ns")->Set("k", "v");
  });
  EXPECT_EQ(kv->Get("k", milliseconds(10000)), "v");
  writer.join();
  EXPECT_FALSE(kv->TryGet("never", milliseconds(120)).has_value());
  const auto start = Clock::now();
  EXPECT_THROW(kv->Get("never", milliseconds(300)), Error);
  EXPECT_GE(SecondsSince(start), 0.29);
  EXPECT_LT(SecondsSince(start), 3.0);
}

TEST(InterruptibleKvTest, AlreadyInterruptedFailsAtOnce) {
  accel::testing::TempDir dir;
  auto kv = MakeInterruptibleKv(
      MakeFileKv(dir.path(), "ns"), [] { return std::string("newer"); }, milliseconds(1000));
  kv->Set("k", "v");
  const auto start = Clock::now();
  EXPECT_THROW(kv->Get("k", milliseconds(10000)), Error);
  EXPECT_LT(SecondsSince(start), 0.5);
}

}  // namespace
}  // namespace accel::worker
