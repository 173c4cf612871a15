// The example trainer's flag parsing.
#include "examples/train_flags.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "examples/idx_reader.h"
#include "examples/progress_view.h"

namespace accel::examples {
namespace {

TEST(TrainFlags, ParsesEveryFormAndDefaults) {
  std::string error;
  auto flags =
      ParseTrainFlags({"--layers", "4", "--hidden=128", "--batch_size", "16", "--optimizer", "sgd",
                       "--grad-accum", "2", "--resume", "--checkpoint-dir", "/tmp/x",
                       "--sample-record", "/tmp/rec", "--step-times", "/tmp/times"},
                      &error);
  ASSERT_TRUE(flags) << error;
  EXPECT_EQ(flags->layers, 4);
  EXPECT_EQ(flags->hidden, 128);
  EXPECT_EQ(flags->batch_size, 16);
  EXPECT_EQ(flags->optimizer, "sgd");
  EXPECT_EQ(flags->grad_accum, 2);
  EXPECT_TRUE(flags->resume);
  EXPECT_EQ(flags->sample_record, "/tmp/rec");
  EXPECT_EQ(flags->step_times, "/tmp/times");
  EXPECT_EQ(flags->input_dim, 784);
  EXPECT_EQ(flags->model, "mlp");
}

TEST(TrainFlags, ReportsAllProblemsAtOnce) {
  std::string error;
  auto flags =
      ParseTrainFlags({"--bogus", "1", "--batch-size", "x", "--lr", "-1", "--model"}, &error);
  EXPECT_FALSE(flags);
  EXPECT_EQ(error,
            "train.bin: unknown flag --bogus (see --help)\n"
            "train.bin: unexpected argument '1' (see --help)\n"
            "train.bin: bad value 'x' for --batch-size\n"
            "train.bin: --model needs a value\n"
            "train.bin: --lr must be positive\n");
}

TEST(TrainFlags, WarmupMustLeaveTimedSteps) {
  std::string error;
  EXPECT_FALSE(ParseTrainFlags({"--steps", "20", "--warmup", "20"}, &error));
  EXPECT_EQ(error, "train.bin: --warmup must be in [0, --steps), got 20\n");
  EXPECT_TRUE(ParseTrainFlags({"--steps", "21", "--warmup", "20"}, &error)) << error;
}

TEST(TrainFlags, DeviceDataAndLogEvery) {
  std::string error;
  auto defaults = ParseTrainFlags({}, &error);
  ASSERT_TRUE(defaults) << error;
  EXPECT_FALSE(defaults->device_data);
  EXPECT_FALSE(defaults->log_every.has_value());  // 1 on a CPU, 20 on a GPU
  EXPECT_EQ(defaults->cuda_graph, "auto");
  auto flags = ParseTrainFlags({"--device-data", "--log-every", "0"}, &error);
  ASSERT_TRUE(flags) << error;
  EXPECT_TRUE(flags->device_data);
  EXPECT_EQ(flags->log_every, 0);
  EXPECT_FALSE(ParseTrainFlags({"--cuda-graph", "sometimes"}, &error));
  EXPECT_FALSE(ParseTrainFlags({"--log-every", "-2"}, &error));
  EXPECT_EQ(error, "train.bin: --log-every must not be negative\n");
}

TEST(TrainFlags, MinStepMs) {
  std::string error;
  auto defaults = ParseTrainFlags({}, &error);
  ASSERT_TRUE(defaults) << error;
  EXPECT_EQ(defaults->min_step_ms, 0);
  auto flags = ParseTrainFlags({"--min-step-ms", "12.5"}, &error);
  ASSERT_TRUE(flags) << error;
  EXPECT_EQ(flags->min_step_ms, 12.5);
  EXPECT_EQ(defaults->pace_until, "");
  flags = ParseTrainFlags({"--min-step-ms", "5", "--pace-until", "/x/go"}, &error);
  ASSERT_TRUE(flags) << error;
  EXPECT_EQ(flags->pace_until, "/x/go");
  EXPECT_FALSE(ParseTrainFlags({"--min-step-ms", "-1"}, &error));
  EXPECT_EQ(error, "train.bin: --min-step-ms must not be negative\n");
}

TEST(TrainFlags, ResumeNeedsACheckpointDir) {
  std::string error;
  EXPECT_FALSE(ParseTrainFlags({"--resume"}, &error));
  EXPECT_EQ(error, "train.bin: --resume needs --checkpoint-dir\n");
}

}  // namespace
}  // namespace accel::examples
