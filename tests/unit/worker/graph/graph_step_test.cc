// What a CUDA graph of a training step replays, checked on a CPU build: MaskedOptimizer against
// torch::optim over a generator of SGD / AdamW settings with a seeded schedule of skipped
// (overflow) steps, and Accelerator::compile_step's step body (run eagerly, no capture) against
// the eager step, loss scaling and injected overflows included.
#include <gtest/gtest.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "accel/accelerator.h"
#include "tests/testing/tiny_model.h"
#include "worker/src/graph/masked_optimizer.h"

namespace accel {
namespace {

using worker::MaskedOptimizer;

std::vector<at::Tensor> Params(std::uint64_t seed) {
  at::manual_seed(static_cast<std::int64_t>(seed));
  return {at::randn({4, 3}).requires_grad_(), at::randn({4}).requires_grad_()};
}

void SetGrads(std::vector<at::Tensor>& params, std::uint64_t seed, int step) {
  at::manual_seed(static_cast<std::int64_t>(seed * 1000 + step));
  for (auto& p : params) p.mutable_grad() = at::randn_like(p);
}

// One case: the same parameters under the optimizer (reference: step() only on clean steps)
// and under MaskedOptimizer (Step(found_inf) every step), after one real step of each.
template <typename Opt, typename Options>
void CheckCase(const Options& options, std::uint64_t seed, const std::string& name) {
  auto ref = Params(seed);
  auto ours = Params(seed);
  Opt ref_opt(ref, options);
  Opt our_opt(ours, options);
  SetGrads(ref, seed, 0);
  SetGrads(ours, seed, 0);
  ref_opt.step();
  our_opt.step();
  for (auto& p : ours) p.mutable_grad().reset();  // LibTorch 2.x's zero_grad leaves none
  std::string why;
  auto masked = MaskedOptimizer::Make(our_opt, &why);
  ASSERT_TRUE(masked) << name << ": " << why;
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  for (int step = 1; step <= 12; ++step) {
    if (step == 7) {  // a scheduler: the host's learning rate changes
      for (Opt* o : {&ref_opt, &our_opt}) o->param_groups()[0].options().set_lr(options.lr() / 2);
    }
    if (step == 5) masked->SyncToOptimizer();  // a save_state midway changes nothing
    const bool skip = rng() % 3 == 0;
    SetGrads(ref, seed, step);
    SetGrads(ours, seed, step);
    std::vector<at::Tensor> before;
    for (auto& p : ours) before.push_back(p.detach().clone());
    if (!skip) ref_opt.step();
    masked->RefreshHyperparameters();
    masked->Step(at::full({1}, skip ? 1.0 : 0.0));
    for (std::size_t i = 0; i < ours.size(); ++i) {
      if (skip) {
        EXPECT_TRUE(at::equal(ours[i], before[i]))
            << name << " step " << step << ": a skip moved it";
      }
      EXPECT_TRUE(at::allclose(ours[i], ref[i], 1e-5, 1e-7))
          << name << " step " << step << " param " << i << "\n"
          << (ours[i] - ref[i]).abs().max().item<double>();
    }
  }
  masked->SyncToOptimizer();
  if constexpr (std::is_same_v<Opt, torch::optim::AdamW>) {
    for (std::size_t i = 0; i < ours.size(); ++i) {
      auto& a = static_cast<torch::optim::AdamWParamState&>(*ref_opt.state().begin()->second);
      auto& b = static_cast<torch::optim::AdamWParamState&>(*our_opt.state().begin()->second);
      EXPECT_EQ(a.step(), b.step()) << name;
    }
  }
}

TEST(MaskedOptimizerTest, SgdMatchesLibTorchAndSkipsLeaveEverythingUnchanged) {
  std::uint64_t seed = 1;
  for (double momentum : {0.0, 0.9}) {
    for (double dampening : {0.0, 0.1}) {
      for (bool nesterov : {false, true}) {
        if (nesterov && (momentum == 0 || dampening != 0)) continue;  // LibTorch refuses
        for (double wd : {0.0, 0.01}) {
          auto o = torch::optim::SGDOptions(0.05)
                       .momentum(momentum)
                       .dampening(dampening)
                       .nesterov(nesterov)
                       .weight_decay(wd);
          CheckCase<torch::optim::SGD>(
              o, seed++,
              "sgd m=" + std::to_string(momentum) + " d=" + std::to_string(dampening) +
                  " n=" + std::to_string(nesterov) + " wd=" + std::to_string(wd));
        }
      }
    }
  }
}

TEST(MaskedOptimizerTest, AdamWMatchesLibTorchAndSkipsLeaveEverythingUnchanged) {
  std::uint64_t seed = 100;
  for (double wd : {0.0, 0.01}) {
    for (auto betas : {std::make_tuple(0.9, 0.999), std::make_tuple(0.8, 0.99)}) {
      auto o = torch::optim::AdamWOptions(1e-2).weight_decay(wd).betas(betas).eps(1e-6);
      CheckCase<torch::optim::AdamW>(o, seed++, "adamw wd=" + std::to_string(wd));
    }
  }
}

TEST(MaskedOptimizerTest, RefusesWhatItCannotDo) {
  auto params = Params(7);
  std::string why;
  torch::optim::AdamW amsgrad(params, torch::optim::AdamWOptions(1e-3).amsgrad(true));
  SetGrads(params, 7, 0);
  amsgrad.step();
  EXPECT_FALSE(MaskedOptimizer::Make(amsgrad, &why));
  EXPECT_NE(why.find("amsgrad"), std::string::npos) << why;
  torch::optim::AdamW fresh(params, torch::optim::AdamWOptions(1e-3));
  EXPECT_FALSE(MaskedOptimizer::Make(fresh, &why));
  EXPECT_NE(why.find("no step taken"), std::string::npos) << why;
  torch::optim::Adam adam(params, torch::optim::AdamOptions(1e-3));
  adam.step();
  EXPECT_FALSE(MaskedOptimizer::Make(adam, &why));
  EXPECT_NE(why.find("SGD and AdamW"), std::string::npos) << why;
}

// train.bin's model and data, small; returns the parameters after `steps` steps, the skipped
// count and the final scale. Batches whose index is in `poison` carry an inf (an overflow).
struct TrainRun {
  std::vector<at::Tensor> params;
  std::int64_t skipped = 0;
  double scale = 0;
  std::string reason;
};

TrainRun Train(bool compiled, bool adamw, const std::vector<int>& poison, bool body) {
  Options o = testing::World1();
  o.loss_scaling = LossScaling::kDynamic;
  o.init_scale = 1024;
  o.growth_interval = 3;
  Accelerator acc(o);
  at::manual_seed(3);
  torch::nn::Sequential model(torch::nn::Linear(6, 8), torch::nn::ReLU(), torch::nn::Linear(8, 3));
  model = acc.prepare(model);
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (adamw) {
    opt = std::make_unique<torch::optim::AdamW>(
        model->parameters(), torch::optim::AdamWOptions(1e-2).weight_decay(0.01));
  } else {
    opt = std::make_unique<torch::optim::SGD>(model->parameters(),
                                              torch::optim::SGDOptions(0.1).momentum(0.9));
  }
  auto forward = [&](const at::Tensor& x, const at::Tensor& y) {
    return torch::nn::functional::cross_entropy(model->forward(x), y);
  };
  std::optional<CompiledStep> step;
  if (compiled) {
    step.emplace(acc.compile_step(*opt, forward));
    if (body) internal::RunBodyEagerlyForTesting(*step);
  }
  for (int i = 0; i < 20; ++i) {
    at::manual_seed(1000 + i);
    at::Tensor x = at::randn({5 + (i % 2), 6});  // two shapes
    at::Tensor y = at::randint(0, 3, {x.size(0)});
    if (std::find(poison.begin(), poison.end(), i) != poison.end()) {
      x[0][0] = std::numeric_limits<float>::infinity();
    }
    auto sync = acc.accumulate(model);
    if (step) {
      (*step)(x, y);
    } else {
      acc.backward(acc.autocast([&] { return forward(x, y); }));
      acc.step(*opt);
    }
  }
  TrainRun run;
  for (const auto& p : model->parameters()) run.params.push_back(p.detach().clone());
  run.skipped = acc.skipped_steps();
  run.scale = acc.loss_scale();
  if (step) run.reason = step->eager_reason();
  return run;
}

TEST(CompiledStepTest, OnACpuEveryStepIsTheEagerStepAndSaysWhy) {
  const TrainRun eager = Train(false, true, {4}, false);
  const TrainRun compiled = Train(true, true, {4}, false);
  EXPECT_NE(compiled.reason.find("the device is cpu"), std::string::npos) << compiled.reason;
  ASSERT_EQ(eager.params.size(), compiled.params.size());
  for (std::size_t i = 0; i < eager.params.size(); ++i) {
    EXPECT_TRUE(at::equal(eager.params[i], compiled.params[i])) << "param " << i;
  }
  EXPECT_EQ(eager.skipped, compiled.skipped);
}

// The step body a graph would replay, against the eager step: the same skipped steps (the
// first, at the initial scale, and each poisoned batch), the same scale, parameters equal to
// float32 rounding (device-side bias corrections and learning rate).
TEST(CompiledStepTest, TheGraphsStepBodySkipsWhatGradScalerSkipsAndTrainsTheSame) {
  for (bool adamw : {false, true}) {
    const std::vector<int> poison = {6, 7, 13};
    const TrainRun eager = Train(false, adamw, poison, false);
    const TrainRun body = Train(true, adamw, poison, true);
    const char* name = adamw ? "adamw" : "sgd momentum";
    EXPECT_EQ(body.reason, "") << name;
    EXPECT_EQ(eager.skipped, body.skipped) << name;
    EXPECT_GE(eager.skipped, static_cast<std::int64_t>(poison.size())) << name;
    EXPECT_EQ(eager.scale, body.scale) << name;
    for (std::size_t i = 0; i < eager.params.size(); ++i) {
      EXPECT_TRUE(at::allclose(eager.params[i], body.params[i], 1e-4, 1e-6))
          << name << " param " << i << ": "
          << (eager.params[i] - body.params[i]).abs().max().item<double>();
    }
  }
}

}  // namespace
}  // namespace accel
