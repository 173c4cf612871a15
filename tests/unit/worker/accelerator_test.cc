// Accelerator in a world of 1 (no peers, no sockets): accumulation boundaries, loss division and
// scaling, skip on overflow, autocast, checkpoints, progress file, world-1 collectives.
#include "accel/accelerator.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <torch/data/example.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "tests/testing/tiny_model.h"

namespace accel {
namespace {

using testing::Lin;
using testing::World1;

TEST(AcceleratorTest, BareProcessIsWorldOfOneOnCpu) {
  Accelerator acc(World1());
  EXPECT_EQ(acc.num_processes(), 1);
  EXPECT_EQ(acc.process_index(), 0);
  EXPECT_TRUE(acc.is_main_process());
  EXPECT_TRUE(acc.device().is_cpu());
  EXPECT_EQ(acc.communicator().name(), "local");
  EXPECT_EQ(acc.loss_scale(), 1.0);
  EXPECT_TRUE(at::equal(acc.gather(at::ones({2})), at::ones({2})));
  EXPECT_TRUE(at::equal(acc.reduce(at::ones({2})), at::ones({2})));
  acc.wait_for_everyone();
}

TEST(AcceleratorTest, AccumulationSyncsEveryNthMicroStepAndDividesTheLoss) {
  Accelerator acc(World1(3));
  Lin model = acc.prepare(Lin());
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(1.0));
  at::Tensor x = at::ones({1, 3});
  std::vector<bool> syncs, steps;
  for (int micro = 1; micro <= 6; ++micro) {
    auto guard = acc.accumulate(model);
    syncs.push_back(guard.sync_gradients());
    EXPECT_EQ(acc.sync_gradients(), guard.sync_gradients());
    acc.backward(model->forward(x).sum());
    if (micro == 3) {
      // Three micro-steps of loss/3: the bias gradient is exactly 1.
      EXPECT_TRUE(at::allclose(model->fc->bias.grad(), at::ones({2})));
    }
    steps.push_back(acc.step(opt));
  }
  EXPECT_EQ(syncs, (std::vector<bool>{false, false, true, false, false, true}));
  EXPECT_EQ(steps, syncs);
  EXPECT_EQ(acc.step_count(), 2);
}

TEST(AcceleratorTest, EndOfDataForcesASync) {
  Accelerator acc(World1(4));
  Lin model = acc.prepare(Lin());
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  auto loader = acc.prepare_loader(at::randn({6, 3}), at::randn({6, 2}), 1, false);
  std::vector<bool> syncs;
  for (const auto& batch : loader) {
    auto guard = acc.accumulate(model);
    syncs.push_back(guard.sync_gradients());
    acc.backward((model->forward(batch.data) - batch.target).pow(2).mean());
    acc.step(opt);
  }
  // Six batches with N=4: a sync at 4 and at the last batch (like accelerate).
  EXPECT_EQ(syncs, (std::vector<bool>{false, false, false, true, false, true}));
}

// A torch::data-style dataset: get(index) -> Example<>, size() -> optional<size_t>.
struct SquaresDataset {
  torch::data::Example<> get(size_t i) const {
    return {at::full({2}, static_cast<float>(i)), at::full({1}, static_cast<float>(i * i))};
  }
  c10::optional<size_t> size() const { return 10; }
};

TEST(AcceleratorTest, PrepareLoaderTakesADataset) {
  Accelerator acc(World1());
  auto loader = acc.prepare_loader(std::make_shared<SquaresDataset>(), 4, /*shuffle=*/false);
  EXPECT_EQ(loader.size(), 3);
  std::vector<int64_t> rows;
  for (const auto& batch : loader) {
    EXPECT_EQ(batch.data.size(1), 2);
    for (int64_t r = 0; r < batch.data.size(0); ++r) {
      const auto i = batch.data[r][0].item<float>();
      EXPECT_EQ(batch.target[r][0].item<float>(), i * i);
      rows.push_back(static_cast<int64_t>(i));
    }
  }
  EXPECT_EQ(rows, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(AcceleratorTest, DynamicScalingSkipsOverflowAndHalves) {
  Options o = World1();
  o.loss_scaling = LossScaling::kDynamic;
  o.init_scale = 1024;
  Accelerator acc(o);
  Lin model = acc.prepare(Lin());
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  at::Tensor x = at::ones({1, 3});
  acc.backward(model->forward(x).sum());
  // The gradient is scaled by 1024 until step() unscales it.
  EXPECT_TRUE(at::allclose(model->fc->bias.grad(), at::full({2}, 1024.0)));
  at::Tensor before = model->fc->weight.detach().clone();
  EXPECT_TRUE(acc.step(opt));
  EXPECT_TRUE(at::allclose(model->fc->weight, before - 0.1));  // unscaled gradient of 1
  acc.backward(model->forward(x).sum());
  model->fc->weight.mutable_grad()[1][1] = std::numeric_limits<float>::quiet_NaN();
  before = model->fc->weight.detach().clone();
  EXPECT_FALSE(acc.step(opt));
  EXPECT_TRUE(at::equal(model->fc->weight, before));
  EXPECT_EQ(acc.loss_scale(), 512.0);
  EXPECT_EQ(acc.skipped_steps(), 1);
  EXPECT_FALSE(model->fc->weight.grad().defined() &&
               model->fc->weight.grad().isnan().any().item<bool>())
      << "gradients are zeroed after a skipped step";
}

TEST(AcceleratorTest, ClipGradNormUnscalesFirst) {
  Options o = World1();
  o.loss_scaling = LossScaling::kDynamic;
  o.init_scale = 256;
  Accelerator acc(o);
  Lin model = acc.prepare(Lin());
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  acc.backward(model->forward(at::ones({1, 3})).sum());
  const double norm = acc.clip_grad_norm(1.0);
  EXPECT_NEAR(norm, std::sqrt(8.0), 1e-5);  // 6 weight grads of 1 and 2 bias grads of 1, unscaled
  EXPECT_TRUE(acc.step(opt));
}

TEST(AcceleratorTest, Fp16OnCpuFallsBackToFp32AndBf16Autocasts) {
  Options fp16 = World1();
  fp16.mixed_precision = MixedPrecision::kFp16;
  Accelerator a(fp16);
  EXPECT_EQ(a.mixed_precision(), MixedPrecision::kNo);
  EXPECT_EQ(a.loss_scale(), 1.0);  // no scaler without fp16
  torch::nn::Linear lin(3, 2);
  EXPECT_EQ(a.autocast([&] { return lin->forward(at::ones({1, 3})); }).scalar_type(), at::kFloat);

  Options bf16 = World1();
  bf16.mixed_precision = MixedPrecision::kBf16;
  Accelerator b(bf16);
  EXPECT_EQ(b.mixed_precision(), MixedPrecision::kBf16);
  EXPECT_EQ(b.autocast([&] {
               return lin->forward(at::ones({1, 3}));
             }).scalar_type(),
            at::kBFloat16);
  EXPECT_EQ(lin->forward(at::ones({1, 3})).scalar_type(), at::kFloat);  // restored after
}

TEST(AcceleratorTest, SaveLoadRoundTripAndProgressFile) {
  const std::string dir = ::testing::TempDir() + "accel_unit_ckpt";
  const std::string progress = ::testing::TempDir() + "accel_unit_progress";
  std::filesystem::remove_all(dir);
  Options o = World1();
  o.progress_file = progress;
  o.loss_scaling = LossScaling::kDynamic;
  o.init_scale = 64;
  std::vector<at::Tensor> saved;
  {
    Accelerator acc(o);
    Lin model = acc.prepare(Lin());
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    acc.prepare(opt);
    for (int i = 0; i < 3; ++i) {
      acc.backward(model->forward(at::ones({1, 3})).sum());
      acc.step(opt);
    }
    acc.save_state(dir);
    for (const auto& p : model->parameters()) saved.push_back(p.detach().clone());
  }
  std::ifstream in(progress, std::ios::binary);
  unsigned char bytes[8] = {};
  in.read(reinterpret_cast<char*>(bytes), 8);
  EXPECT_EQ(bytes[0], 3);  // 8-byte little-endian step counter
  EXPECT_EQ(bytes[7], 0);
  EXPECT_FALSE(std::filesystem::exists(dir + ".tmp"));

  Accelerator acc(o);
  Lin model = acc.prepare(Lin());
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  acc.prepare(opt);
  acc.load_state(dir);
  EXPECT_EQ(acc.step_count(), 3);
  EXPECT_EQ(acc.loss_scale(), 64.0);
  auto params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(at::equal(params[i], saved[i]));
  EXPECT_THROW(acc.load_state(dir + "_missing"), Error);
  std::filesystem::remove_all(dir);
}

TEST(AcceleratorTest, InvalidOptionsListEveryProblem) {
  Options o = World1(0);
  o.growth_interval = 0;
  try {
    Accelerator acc(o);
    FAIL() << "expected accel::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "create accelerator: invalid options: gradient_accumulation_steps must be >= 1, got "
              "0; growth_interval must be >= 1");
  }
}

TEST(AcceleratorTest, PreparingAModuleTwiceIsAnError) {
  Accelerator acc(World1());
  Lin model = acc.prepare(Lin());
  EXPECT_THROW(acc.prepare(model), Error);
}

TEST(AcceleratorTest, WorldAboveOneWithoutRankIsAClearError) {
  Options o = World1();
  o.world_size = 2;
  try {
    Accelerator acc(o);
    FAIL() << "expected accel::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "create accelerator: world size 2 but no rank: set RANK (accel-launch does)");
  }
}

TEST(AcceleratorTest, WorldAboveOneWithoutStoreIsAClearError) {
  Options o = World1();
  o.world_size = 2;
  o.rank = 1;
  o.backend = Backend::kGloo;
  try {
    Accelerator acc(o);
    FAIL() << "expected accel::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ACCEL_STORE_ENDPOINT"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace accel
