#include "worker/src/elastic/generation.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "tests/testing/files.h"

namespace accel::worker {
namespace {

Generation Sample(std::int64_t number) {
  Generation g;
  g.number = number;
  g.world = 4;
  g.base_rank = 2;
  g.group_rank = 1;
  g.group_world = 2;
  g.local_world = 2;
  g.store_attempt = 7;
  g.master_port = 29511;
  return g;
}

TEST(GenerationTest, FormatParsesBack) {
  std::string error;
  auto g = ParseGeneration(Sample(3).Format(), &error);
  ASSERT_TRUE(g.has_value()) << error;
  EXPECT_EQ(g->Format(), Sample(3).Format());
}

// `joining` (workers started into a running job) reads back; absent (files written before it
// existed) is false; anything but 0 or 1 is refused.
TEST(GenerationTest, JoiningReadsBackAndIsOptional) {
  std::string error;
  Generation joining = Sample(2);
  joining.joining = true;
  auto g = ParseGeneration(joining.Format(), &error);
  ASSERT_TRUE(g.has_value()) << error;
  EXPECT_TRUE(g->joining);
  std::string text = Sample(2).Format();
  ASSERT_NE(text.find("joining=0\n"), std::string::npos) << text;
  text.erase(text.find("joining=0\n"));
  g = ParseGeneration(text, &error);
  ASSERT_TRUE(g.has_value()) << error;
  EXPECT_FALSE(g->joining);
  EXPECT_FALSE(ParseGeneration(text + "joining=2\n", &error));
  EXPECT_NE(error.find("joining must be 0 or 1"), std::string::npos) << error;
}

// recover_timeout_ms (issue 35): the launcher's rdzv_timeout and a margin, read back; absent
// is 0 (recover() then waits the connect deadline); a negative one is refused.
TEST(GenerationTest, RecoverTimeoutReadsBackAndIsOptional) {
  std::string error;
  Generation g = Sample(2);
  g.recover_timeout_ms = 960000;
  auto back = ParseGeneration(g.Format(), &error);
  ASSERT_TRUE(back.has_value()) << error;
  EXPECT_EQ(back->recover_timeout_ms, 960000);
  std::string text = Sample(2).Format();
  ASSERT_NE(text.find("recover_timeout_ms=0\n"), std::string::npos) << text;
  text.erase(text.find("recover_timeout_ms="));
  back = ParseGeneration(text, &error);
  ASSERT_TRUE(back.has_value()) << error;
  EXPECT_EQ(back->recover_timeout_ms, 0);
  EXPECT_FALSE(ParseGeneration(text + "recover_timeout_ms=-1\n", &error));
  EXPECT_NE(error.find("recover_timeout_ms must be >= 0"), std::string::npos) << error;
}

TEST(GenerationTest, MissingOrInconsistentValuesAreRefused) {
  std::string error;
  EXPECT_FALSE(ParseGeneration("generation=1\nworld=4\n", &error));
  EXPECT_NE(error.find("no base_rank"), std::string::npos) << error;
  Generation g = Sample(1);
  g.base_rank = 3;  // 3 + 2 local ranks > world 4
  EXPECT_FALSE(ParseGeneration(g.Format(), &error));
  EXPECT_NE(error.find("inconsistent"), std::string::npos) << error;
  EXPECT_FALSE(ParseGeneration("generation=x\n", &error));
  EXPECT_NE(error.find("malformed"), std::string::npos) << error;
}

TEST(GenerationTest, WatchCallsOnceForANewerGenerationAndWaitReturnsIt) {
  const accel::testing::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/gen";
  std::string error;
  ASSERT_TRUE(WriteGeneration(path, Sample(0), &error)) << error;
  std::atomic<int> calls{0};
  {
    GenerationWatch watch(
        path, 0, [&](std::int64_t) { ++calls; }, std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(calls.load(), 0);  // generation 0 is the known one
    ASSERT_TRUE(WriteGeneration(path, Sample(1), &error)) << error;
    auto g = WaitForGeneration(path, 0, std::chrono::seconds(5), &error);
    ASSERT_TRUE(g.has_value()) << error;
    EXPECT_EQ(g->number, 1);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (calls.load() == 0 && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(calls.load(), 1);
    watch.set_known(1);
  }
  EXPECT_FALSE(WaitForGeneration(path, 1, std::chrono::milliseconds(50), &error).has_value());
  EXPECT_NE(error.find("still generation 1"), std::string::npos) << error;
}

}  // namespace
}  // namespace accel::worker
