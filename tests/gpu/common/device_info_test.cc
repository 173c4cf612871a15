// common/device_info on a real GPU: the facts `accel-launch env` reports, read without LibTorch.
#include "common/device_info.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "tests/testing/gpu_test_util.h"

namespace accel {
namespace {

TEST(GpuDeviceInfoTest, ReportsNameMemoryComputeCapabilityAndSms) {
  DeviceReport report = DetectDevices();
  if (report.gpus.empty()) ACCEL_GPU_SKIP("no GPU: " + report.gpu_error);
  for (const GpuInfo& gpu : report.gpus) {
    std::printf("GPU %d: %s, %lld MiB, compute capability %d.%d, %d SMs, fp16 %s, bf16 %s\n",
                gpu.index, gpu.name.c_str(), static_cast<long long>(gpu.total_mib), gpu.cc_major,
                gpu.cc_minor, gpu.sm_count, gpu.fp16 ? "yes" : "no", gpu.bf16 ? "yes" : "no");
    EXPECT_FALSE(gpu.name.empty());
    EXPECT_GT(gpu.total_mib, 1024);
    EXPECT_GE(gpu.cc_major, 3);
    EXPECT_GT(gpu.sm_count, 0);
  }
  std::printf("CUDA driver %s, runtime %s (%s), NCCL %s (%s), cuDNN %s (%s)\n",
              report.cuda_driver.version.c_str(), report.cuda_runtime.version.c_str(),
              report.cuda_runtime.detail.c_str(), report.nccl.version.c_str(),
              report.nccl.detail.c_str(), report.cudnn.version.c_str(),
              report.cudnn.detail.c_str());
  EXPECT_TRUE(report.cuda_driver.found) << report.cuda_driver.detail;
}

}  // namespace
}  // namespace accel
