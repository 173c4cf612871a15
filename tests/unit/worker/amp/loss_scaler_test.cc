// The loss scaler against torch.cuda.amp.GradScaler's recorded sequence.
// Recorded by tests/testing/gradscaler_sequence.py (torch 1.13's GradScaler logic with the two
// CUDA-only kernels transcribed from AmpKernels.cu; see the script), output pasted below.
#include "worker/src/amp/loss_scaler.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace accel::worker {
namespace {

struct Recorded {
  int step;
  const char* inject;  // "-", "inf" or "nan"
  bool stepped;
  double scale_after;
  int tracker_after;
};

// /usr/bin/python3 tests/testing/gradscaler_sequence.py short
const Recorded kShort[] = {
    {1, "-", true, 65536.0, 1},     {2, "-", true, 65536.0, 2},    {3, "-", true, 131072.0, 0},
    {4, "inf", false, 65536.0, 0},  {5, "nan", false, 32768.0, 0}, {6, "-", true, 32768.0, 1},
    {7, "-", true, 32768.0, 2},     {8, "-", true, 65536.0, 0},    {9, "-", true, 65536.0, 1},
    {10, "inf", false, 32768.0, 0}, {11, "-", true, 32768.0, 1},   {12, "-", true, 32768.0, 2},
    {13, "-", true, 65536.0, 0},    {14, "-", true, 65536.0, 1},
};

// Runs one GradScaler-style step: a gradient of ones scaled by the current scale, optionally
// poisoned, unscaled and checked; returns whether the step would run.
bool Step(LossScaler& scaler, const std::string& inject, at::Tensor* grad_out = nullptr) {
  at::Tensor grad = at::full({4}, scaler.scale(), at::kFloat);
  if (inject == "inf") grad[2] = std::numeric_limits<float>::infinity();
  if (inject == "nan") grad[1] = std::numeric_limits<float>::quiet_NaN();
  at::Tensor found_inf = scaler.UnscaleAndCheck({grad});
  const bool stepped = found_inf.item<float>() == 0.0f;
  scaler.Update(found_inf);
  if (grad_out != nullptr) *grad_out = grad;
  return stepped;
}

TEST(LossScalerTest, MatchesRecordedGradScalerSequence) {
  LossScaler scaler({65536.0, 2.0, 0.5, 3}, c10::Device(c10::kCPU));
  for (const Recorded& r : kShort) {
    SCOPED_TRACE("step " + std::to_string(r.step));
    at::Tensor grad;
    EXPECT_EQ(Step(scaler, r.inject, &grad), r.stepped);
    EXPECT_EQ(scaler.scale(), r.scale_after);
    EXPECT_EQ(scaler.growth_tracker(), r.tracker_after);
    if (r.stepped) {
      EXPECT_TRUE(at::equal(grad, at::ones({4})));  // exactly unscaled
    }
  }
}

TEST(LossScalerTest, DefaultsGrowAfter2000CleanStepsAndBackOff) {
  // /usr/bin/python3 tests/testing/gradscaler_sequence.py defaults:
  //   1999 - 1 65536.0 1999 / 2000 - 1 131072.0 0 / 2001 inf 0 65536.0 0 / 2002 - 1 65536.0 1
  // Our defaults (accel/defaults.h) must reproduce GradScaler's.
  LossScaler scaler(LossScalerOptions{}, c10::Device(c10::kCPU));
  for (int step = 1; step <= 1999; ++step) ASSERT_TRUE(Step(scaler, "-"));
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_EQ(scaler.growth_tracker(), 1999);
  EXPECT_TRUE(Step(scaler, "-"));
  EXPECT_EQ(scaler.scale(), 131072.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_FALSE(Step(scaler, "inf"));
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_TRUE(Step(scaler, "-"));
  EXPECT_EQ(scaler.growth_tracker(), 1);
}

TEST(LossScalerTest, GrowthStopsBeforeInfinity) {
  LossScaler scaler({3.0e38, 2.0, 0.5, 1}, c10::Device(c10::kCPU));
  at::Tensor grad = at::ones({2});
  scaler.Update(scaler.UnscaleAndCheck({grad}));
  EXPECT_EQ(scaler.scale(), static_cast<double>(3.0e38f));  // 6e38 overflows float: kept
}

TEST(LossScalerTest, UndefinedGradsAreSkippedAndRestoreSetsState) {
  LossScaler scaler({1024.0, 2.0, 0.5, 10}, c10::Device(c10::kCPU));
  at::Tensor found = scaler.UnscaleAndCheck({at::Tensor(), at::full({3}, 2048.0)});
  EXPECT_EQ(found.item<float>(), 0.0f);
  scaler.Restore(8.0, 7);
  EXPECT_EQ(scaler.scale(), 8.0);
  EXPECT_EQ(scaler.growth_tracker(), 7);
}

}  // namespace
}  // namespace accel::worker
