// libaccel's fp16 training on a real GPU: autocast, the dynamic loss scaler with the fused
// unscale and scale update, overflow → skip and halve, a small MLP that converges, and the
// scale/skip sequence of a real run recorded for tests/gpu/worker/amp/gradscaler_replay_test.py,
// which replays it through torch.amp.GradScaler("cuda").
#include "accel/accelerator.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "tests/testing/gpu_test_util.h"

namespace accel {
namespace {

const c10::Device kCuda(c10::kCUDA, 0);

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
  ACCEL_SKIP_WITHOUT_GPU();
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
  ACCEL_SKIP_WITHOUT_GPU();
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

// Trains with a scale high enough that fp16 gradients overflow by themselves at first, a short
// growth interval so the scale grows back (and overflows again), and three injected infs; writes
// one line per step ("step injected stepped scale_after") to
// $ACCEL_GPU_RECORD_DIR/scaler_sequence.tsv for the GradScaler replay.
TEST(GpuAcceleratorTest, Fp16ScalerSequenceIsRecorded) {
  const char* dir = std::getenv("ACCEL_GPU_RECORD_DIR");
  ASSERT_NE(dir, nullptr) << "ACCEL_GPU_RECORD_DIR is not set (run this through ctest)";
  const std::filesystem::path path = std::filesystem::path(dir) / "scaler_sequence.tsv";
  std::filesystem::create_directories(dir);
  std::filesystem::remove(path);  // a stale record must never be replayed
  ACCEL_SKIP_WITHOUT_GPU();
  Options options = Fp16Options();
  options.init_scale = 16777216.0;  // 2^24: the first fp16 backward passes overflow
  options.growth_interval = 8;
  Accelerator acc(options);
  Mlp model = acc.prepare(Mlp());
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05));
  at::Tensor x = at::randn({4096, 64}, kCuda);
  at::Tensor y = x.narrow(1, 0, 10).argmax(1);
  const std::set<int> injected = {40, 41, 77};
  std::ofstream out(path);
  out << std::setprecision(17);  // the replay reads these back: every digit
  out << "# init_scale=" << options.init_scale << " growth_factor=" << options.growth_factor
      << " backoff_factor=" << options.backoff_factor
      << " growth_interval=" << options.growth_interval << "\n";
  int natural_skips = 0, growths = 0;
  double scale = acc.loss_scale();
  for (int step = 1; step <= 120; ++step) {
    at::Tensor xb = x.narrow(0, (step % 32) * 128, 128), yb = y.narrow(0, (step % 32) * 128, 128);
    auto sync = acc.accumulate(model);
    auto loss = acc.autocast([&] { return at::cross_entropy_loss(model->forward(xb), yb); });
    acc.backward(loss);
    const bool inject = injected.count(step) > 0;
    if (inject) model->fc1->weight.mutable_grad()[1][2] = std::numeric_limits<float>::infinity();
    const bool stepped = acc.step(opt);
    const double after = acc.loss_scale();
    EXPECT_FALSE(inject && stepped) << "step " << step << ": an injected inf was stepped";
    natural_skips += !stepped && !inject;
    growths += after > scale;
    scale = after;
    char line[128];
    std::snprintf(line, sizeof(line), "%d\t%d\t%d\t%.9g\n", step, inject ? 1 : 0, stepped ? 1 : 0,
                  after);
    out << line;
  }
  out.close();
  std::printf("recorded %s: %d natural overflows, %d injected, %d growths, final scale %.0f\n",
              path.c_str(), natural_skips, static_cast<int>(injected.size()), growths, scale);
  EXPECT_GE(natural_skips, 1) << "a scale of 2^24 should overflow fp16 gradients";
  EXPECT_GE(growths, 2) << "the scale should grow every 8 clean steps";
}

}  // namespace
}  // namespace accel
