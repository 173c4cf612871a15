// libaccel on a real GPU (label gpu): NCCL world-1 collectives, the fused unscale/inf check and
// scale update against the CPU path, fp16 overflow handling, fp16 training, and the device facts
// that `accel-launch env` reports. Every test skips with the reason when there is no GPU.
#include "accel/accelerator.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <chrono>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "common/device_info.h"
#include "worker/src/amp/loss_scaler.h"
#include "worker/src/comm/factory.h"

namespace accel {
namespace {

// Returns why CUDA tests cannot run here, or "" when they can.
std::string NoGpuReason() {
  std::string why;
  if (CountGpus(&why) == 0) return "no GPU visible (" + why + ")";
  if (torch::cuda::device_count() == 0) {
    return "LibTorch was built without CUDA (Debian's CPU-only libtorch); build against a CUDA "
           "LibTorch (scripts/device-check)";
  }
  return "";
}

#define SKIP_WITHOUT_GPU()                               \
  do {                                                   \
    if (std::string why = NoGpuReason(); !why.empty()) { \
      GTEST_SKIP() << why;                               \
    }                                                    \
  } while (0)

const c10::Device kCuda(c10::kCUDA, 0);

TEST(GpuDeviceInfoTest, PrintsNameVramComputeCapabilityAndSms) {
  DeviceReport report = DetectDevices();
  if (report.gpus.empty()) GTEST_SKIP() << "no GPU: " << report.gpu_error;
  for (const GpuInfo& gpu : report.gpus) {
    std::printf("GPU %d: %s, %lld MiB, compute capability %d.%d, %d SMs, fp16 %s, bf16 %s\n",
                gpu.index, gpu.name.c_str(), static_cast<long long>(gpu.total_mib), gpu.cc_major,
                gpu.cc_minor, gpu.sm_count, gpu.fp16 ? "yes" : "no", gpu.bf16 ? "yes" : "no");
    EXPECT_FALSE(gpu.name.empty());
    EXPECT_GT(gpu.total_mib, 1024);
    EXPECT_GE(gpu.cc_major, 3);
    EXPECT_GT(gpu.sm_count, 0);
  }
  std::printf("CUDA driver %s, runtime %s, NCCL %s, cuDNN %s\n", report.cuda_driver.version.c_str(),
              report.cuda_runtime.version.c_str(), report.nccl.version.c_str(),
              report.cudnn.version.c_str());
}

TEST(GpuNcclTest, WorldOfOneCollectivesAreExact) {
  SKIP_WITHOUT_GPU();
#if !ACCEL_HAVE_NCCL
  GTEST_SKIP() << "libaccel was built without NCCL (nccl.h or the CUDA toolkit not found)";
#else
  const auto timeout = std::chrono::seconds(60);
  worker::GroupSpec spec{0, 1, "gpu_test/", timeout};
  auto comm = worker::MakeNcclCommunicator(nullptr, spec, 0);
  EXPECT_EQ(comm->name(), "nccl");
  for (auto dtype : {at::kFloat, at::kHalf}) {
    // Integers up to 2048 are exact in fp16.
    at::Tensor expected = at::arange(2048, at::TensorOptions().dtype(dtype).device(kCuda));
    for (auto op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
      at::Tensor t = expected.clone();
      comm->AllReduce(t, op, timeout);
      EXPECT_TRUE(at::equal(t, expected)) << c10::toString(dtype) << " " << ToString(op);
    }
  }
  at::Tensor b = at::full({5}, 3, at::TensorOptions().dtype(at::kLong).device(kCuda));
  comm->Broadcast(b, 0, timeout);
  EXPECT_TRUE(at::equal(b.cpu(), at::full({5}, 3, at::kLong)));
  at::Tensor g = comm->AllGather(at::ones({2, 3}, kCuda), timeout);
  EXPECT_EQ(g.sizes(), at::IntArrayRef({1, 2, 3}));
  comm->Barrier(timeout);
#endif
}

TEST(GpuLossScalerTest, FusedUnscaleAndUpdateMatchTheCpuPath) {
  SKIP_WITHOUT_GPU();
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

struct MlpImpl : torch::nn::Module {
  MlpImpl()
      : fc1(register_module("fc1", torch::nn::Linear(64, 256))),
        fc2(register_module("fc2", torch::nn::Linear(256, 256))),
        fc3(register_module("fc3", torch::nn::Linear(256, 10))) {}
  at::Tensor forward(at::Tensor x) {
    return fc3->forward(at::relu(fc2->forward(at::relu(fc1->forward(x)))));
  }
  torch::nn::Linear fc1, fc2, fc3;
};
TORCH_MODULE(Mlp);

Options Fp16Options() {
  Options o;
  o.mixed_precision = MixedPrecision::kFp16;
  return o;
}

TEST(GpuAcceleratorTest, Fp16OverflowSkipsTheStepAndHalvesTheScale) {
  SKIP_WITHOUT_GPU();
  Accelerator acc(Fp16Options());
  ASSERT_TRUE(acc.device().is_cuda());
  ASSERT_EQ(acc.mixed_precision(), MixedPrecision::kFp16);
  Mlp model = acc.prepare(Mlp());
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  at::Tensor x = at::randn({32, 64}, kCuda);
  at::Tensor y = at::randint(0, 10, {32}, at::TensorOptions().dtype(at::kLong).device(kCuda));
  auto loss = acc.autocast([&] { return at::cross_entropy_loss(model->forward(x), y); });
  acc.backward(loss);
  model->fc2->weight.mutable_grad()[0][0] = std::numeric_limits<float>::infinity();
  std::vector<at::Tensor> before;
  for (const auto& p : model->parameters()) before.push_back(p.detach().clone());
  EXPECT_EQ(acc.loss_scale(), 65536.0);
  EXPECT_FALSE(acc.step(opt));
  EXPECT_EQ(acc.loss_scale(), 32768.0);
  EXPECT_EQ(acc.skipped_steps(), 1);
  auto params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(at::equal(params[i], before[i]));
}

TEST(GpuAcceleratorTest, Fp16MlpTrainsAndTheLossFalls) {
  SKIP_WITHOUT_GPU();
  Accelerator acc(Fp16Options());
  Mlp model = acc.prepare(Mlp());
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  at::Tensor x = at::randn({2048, 64});
  at::Tensor y = x.narrow(1, 0, 10).argmax(1);  // a learnable labelling
  auto loader = acc.prepare_loader(x, y, 128);
  double first = 0, last = 0;
  for (int epoch = 0; epoch < 8; ++epoch) {
    loader.set_epoch(epoch);
    double sum = 0;
    int n = 0;
    for (const auto& batch : loader) {
      auto sync = acc.accumulate(model);
      at::Tensor out = acc.autocast([&] { return model->forward(batch.data); });
      EXPECT_EQ(out.scalar_type(), at::kHalf);  // autocast is active
      at::Tensor loss = at::cross_entropy_loss(out.to(at::kFloat), batch.target);
      acc.backward(loss);
      acc.step(opt);
      sum += loss.item<double>();
      ++n;
    }
    if (epoch == 0) first = sum / n;
    last = sum / n;
  }
  std::printf("fp16 MLP: loss %.4f -> %.4f, scale %.0f, skipped %lld of %lld steps\n", first, last,
              acc.loss_scale(), static_cast<long long>(acc.skipped_steps()),
              static_cast<long long>(acc.step_count()));
  EXPECT_LT(last, 0.5 * first);
  EXPECT_LT(acc.skipped_steps(), acc.step_count() / 4);
}

}  // namespace
}  // namespace accel
