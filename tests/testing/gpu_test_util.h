// Test helpers for the gpu label: why CUDA tests cannot run here, and the skip that turns into a
// failure where a GPU is required.
//
// Without a GPU (or with a LibTorch built without CUDA) a gpu test skips with the reason. With
// ACCEL_REQUIRE_GPU=1 in the environment (scripts/device-check/check sets it on a machine that
// reports a GPU, or when told to expect one) the same reason fails the test instead: on the GPU
// machine a skip would hide exactly what the check is there to see.
// The Python gpu tests follow the same rule (tests/testing/gpu_case.py).
#ifndef ACCEL_TESTS_TESTING_GPU_TEST_UTIL_H_
#define ACCEL_TESTS_TESTING_GPU_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdlib>
#include <string>

#include "common/device_info.h"

namespace accel::testing {

// The environment variable that turns every gpu-test skip into a failure.
inline constexpr char kRequireGpuEnv[] = "ACCEL_REQUIRE_GPU";

// Returns true when ACCEL_REQUIRE_GPU is set to a non-empty value other than "0".
inline bool GpuRequired() {
  const char* v = std::getenv(kRequireGpuEnv);
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

// Returns why CUDA tests cannot run here, or "" when they can.
inline std::string NoGpuReason() {
  std::string why;
  if (CountGpus(&why) == 0) return "no GPU visible (" + why + ")";
  if (torch::cuda::device_count() == 0) {
    return "LibTorch was built without CUDA (Debian's CPU-only libtorch); build against a CUDA "
           "LibTorch (scripts/device-check/check)";
  }
  return "";
}

}  // namespace accel::testing

// Skips the current test with `why` (a std::string), or fails it when ACCEL_REQUIRE_GPU is set.
#define ACCEL_GPU_SKIP(why)                                                             \
  do {                                                                                  \
    if (::accel::testing::GpuRequired()) {                                              \
      GTEST_FAIL() << "skip counted as a failure (" << ::accel::testing::kRequireGpuEnv \
                   << " is set): " << (why);                                            \
    }                                                                                   \
    GTEST_SKIP() << (why);                                                              \
  } while (0)

// Skips (or fails, see above) when CUDA tests cannot run here.
#define ACCEL_SKIP_WITHOUT_GPU()                                                             \
  do {                                                                                       \
    if (std::string accel_no_gpu = ::accel::testing::NoGpuReason(); !accel_no_gpu.empty()) { \
      ACCEL_GPU_SKIP(accel_no_gpu);                                                          \
    }                                                                                        \
  } while (0)

#endif  // ACCEL_TESTS_TESTING_GPU_TEST_UTIL_H_
