// train.bin --trace: the line format soak_check.py reads, the padding rule and the hash.
#include "examples/train_trace.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "tests/testing/files.h"

namespace accel::examples {
namespace {

TEST(TrainTrace, PaddingIsThePositionsPastTheEpoch) {
  // 10 samples over 4 ranks from position 0: ranks take 0,4,8 / 1,5,9 / 2,6,10 / 3,7,11.
  EXPECT_EQ(TrainTrace::Padding(10, 0, 4, 0, 0, 3), 0);
  EXPECT_EQ(TrainTrace::Padding(10, 0, 4, 1, 0, 3), 0);
  EXPECT_EQ(TrainTrace::Padding(10, 0, 4, 2, 0, 3), 1);
  EXPECT_EQ(TrainTrace::Padding(10, 0, 4, 3, 2, 1), 1);  // the third batch of one sample
  EXPECT_EQ(TrainTrace::Padding(10, 0, 4, 3, 0, 2), 0);
  // A pass resumed at position 6 over 3 ranks: rank 2 takes 8, 11 (padding).
  EXPECT_EQ(TrainTrace::Padding(10, 6, 3, 2, 0, 2), 1);
  EXPECT_EQ(TrainTrace::Padding(10, 6, 3, 0, 0, 2), 0);
}

TEST(TrainTrace, HashIsFnv1aAndOrderSensitive) {
  EXPECT_EQ(Fnv1a("", 0, kFnvOffset), kFnvOffset);
  EXPECT_EQ(Fnv1a("a", 1, kFnvOffset), 0xaf63dc4c8601ec8cULL);  // the published FNV-1a 64 value
  const float ab[] = {1.0f, 2.0f}, ba[] = {2.0f, 1.0f};
  EXPECT_NE(Fnv1a(ab, sizeof(ab), kFnvOffset), Fnv1a(ba, sizeof(ba), kFnvOffset));
}

TEST(TrainTrace, WritesOneWholeLinePerEvent) {
  accel::testing::TempDir dir;
  const std::string path = dir.path() + "/trace";
  {
    TrainTrace none("", 7);
    EXPECT_FALSE(none.enabled());
    TrainTrace trace(path, 7);
    ASSERT_TRUE(trace.enabled());
    TracePoint at{2, 4, 1, 10, 3};
    trace.Start(at, 7, 0xabcULL);
    trace.Fetch(at, {5, 9, 2}, 1);
    at.step = 11;
    trace.Step(at, false, 0);
    trace.Step(at, true, 1);
    trace.Error(at);
    at.generation = 3;
    trace.Regroup(at, 0xffULL);
    trace.End(at, 0xffULL);
  }
  std::ifstream in(path + ".7");
  std::stringstream text;
  text << in.rdbuf();
  const std::string want =
      "start gen 2 world 4 rank 1 step 10 epoch 3 pid 7 time T params 0000000000000abc\n"
      "fetch step 11 gen 2 epoch 3 rank 1 samples 5 9 2 pad 1\n"
      "step 11 gen 2 world 4 rank 1 time T\n"
      "step 11 gen 2 world 4 rank 1 time T params 0000000000000001\n"
      "error gen 2 step 11 time T\n"
      "regroup gen 3 world 4 rank 1 step 11 epoch 3 time T params 00000000000000ff\n"
      "end step 11 gen 3 world 4 rank 1 time T params 00000000000000ff\n";
  EXPECT_EQ(std::regex_replace(text.str(), std::regex(R"(time [0-9]+\.[0-9]{6})"), "time T"), want);
}

}  // namespace
}  // namespace accel::examples
