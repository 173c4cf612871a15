// LossScaler on a real GPU: the fused unscale/inf check (at::_amp_foreach_non_finite_check_and_
// unscale_) and scale update (at::_amp_update_scale_) against the CPU path, value for value.
#include "worker/src/amp/loss_scaler.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "tests/testing/gpu_test_util.h"

namespace accel {
namespace {

const c10::Device kCuda(c10::kCUDA, 0);

TEST(GpuLossScalerTest, FusedUnscaleAndUpdateMatchTheCpuPath) {
  ACCEL_SKIP_WITHOUT_GPU();
  worker::LossScalerOptions options{65536.0, 2.0, 0.5, 3};
  worker::LossScaler gpu(options, kCuda);
  worker::LossScaler cpu(options, c10::Device(c10::kCPU));
  const char* inject[] = {"-", "-", "-", "inf", "nan", "-", "-", "-", "-", "inf", "-"};
  for (const char* kind : inject) {
    std::vector<at::Tensor> cpu_grads = {
        at::randn({1000}) * cpu.scale(),
        at::randn({7, 9}).to(at::kHalf).to(at::kFloat) * cpu.scale()};
    if (std::string(kind) == "inf") cpu_grads[1][3][4] = std::numeric_limits<float>::infinity();
    if (std::string(kind) == "nan") cpu_grads[0][17] = std::numeric_limits<float>::quiet_NaN();
    std::vector<at::Tensor> gpu_grads;
    for (const auto& g : cpu_grads) gpu_grads.push_back(g.to(kCuda));
    at::Tensor cpu_found = cpu.UnscaleAndCheck(cpu_grads);
    at::Tensor gpu_found = gpu.UnscaleAndCheck(gpu_grads);
    EXPECT_EQ(cpu_found.item<float>(), gpu_found.item<float>()) << kind;
    for (size_t i = 0; i < cpu_grads.size(); ++i) {
      EXPECT_TRUE(
          at::equal(cpu_grads[i].nan_to_num(0, 1, -1), gpu_grads[i].cpu().nan_to_num(0, 1, -1)));
    }
    cpu.Update(cpu_found);
    gpu.Update(gpu_found);
    EXPECT_EQ(cpu.scale(), gpu.scale()) << kind;
    EXPECT_EQ(cpu.growth_tracker(), gpu.growth_tracker()) << kind;
  }
}

}  // namespace
}  // namespace accel
