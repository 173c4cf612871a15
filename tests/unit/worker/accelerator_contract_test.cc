// Accelerator's promises in a world of 1 (issue 23): accelerate's rule for a step after the
// guard of a micro-step that did not sync, GradScaler's per-optimizer rules with two optimizers
// (each unscaled once per iteration, its own found_inf, one scale update per iteration), and
// argument errors that leave the group usable.
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "accel/accelerator.h"
#include "tests/testing/files.h"
#include "tests/testing/tiny_model.h"

namespace accel {
namespace {

using testing::Lin;
using testing::World1;

Options Scaled(double init_scale, int growth_interval = 2000) {
  Options o = World1();
  o.loss_scaling = LossScaling::kDynamic;
  o.init_scale = init_scale;
  o.growth_interval = growth_interval;
  return o;
}

// Probe 3: { auto g = acc.accumulate(model); acc.backward(loss); } acc.step(opt);  with N = 2.
TEST(AcceleratorContractTest, StepAfterANonSyncGuardEndedIsSkippedAsInAccelerate) {
  Accelerator acc(World1(2));
  Lin model = acc.prepare(Lin());
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  const at::Tensor before = model->fc->weight.detach().clone();
  {
    auto guard = acc.accumulate(model);
    ASSERT_FALSE(guard.sync_gradients());
    acc.backward(model->forward(at::ones({1, 3})).sum());
  }
  EXPECT_EQ(acc.clip_grad_norm(1.0), 0.0);
  EXPECT_FALSE(acc.step(opt)) << "the gradients are this rank's own: accelerate skips the step";
  EXPECT_TRUE(at::equal(model->fc->weight, before));
  // The window goes on: the next micro-step syncs and steps with both micro-steps' gradients.
  auto guard = acc.accumulate(model);
  ASSERT_TRUE(guard.sync_gradients());
  acc.backward(model->forward(at::ones({1, 3})).sum());
  EXPECT_TRUE(at::allclose(model->fc->bias.grad(), at::ones({2})));  // 2 x (1 / N)
  EXPECT_TRUE(acc.step(opt));
}

struct TwoModels {
  explicit TwoModels(Accelerator& acc)
      : m1(acc.prepare(Lin())),
        m2(acc.prepare(Lin())),
        a(m1->parameters(), torch::optim::SGDOptions(1.0)),
        b(m2->parameters(), torch::optim::SGDOptions(1.0)) {
    acc.prepare(a);
    acc.prepare(b);
  }
  Lin m1, m2;
  torch::optim::SGD a, b;
};

const at::Tensor& X() {
  static const at::Tensor x = at::full({1, 3}, 0.5);
  return x;
}

// Review finding 1: clip_grad_norm -> step(A) -> step(B) unscaled B's gradients a second time.
TEST(AcceleratorContractTest, TwoOptimizersAfterClipEachStepWithTrueGradients) {
  Accelerator acc(Scaled(1024));
  TwoModels t(acc);
  const at::Tensor b_before = t.m2->fc->bias.detach().clone();
  acc.backward(t.m1->forward(X()).sum() + t.m2->forward(X()).sum());
  acc.clip_grad_norm(1e9);
  EXPECT_TRUE(acc.step(t.a));
  EXPECT_TRUE(acc.step(t.b));
  // d(sum)/d(bias) = 1: SGD(lr 1) moves B's bias by exactly -1.
  EXPECT_TRUE(at::allclose(t.m2->fc->bias, b_before - 1)) << t.m2->fc->bias - b_before;
}

// Review finding 1: an inf only in A's gradients halved the scale before B was unscaled, so B
// stepped with gradients twice too large; the scale backs off once per iteration.
TEST(AcceleratorContractTest, InfOnlyInAsGradientsSkipsAOnlyAndBacksOffOnce) {
  Accelerator acc(Scaled(1024));
  TwoModels t(acc);
  const at::Tensor a_before = t.m1->fc->bias.detach().clone();
  const at::Tensor b_before = t.m2->fc->bias.detach().clone();
  const double inf = std::numeric_limits<double>::infinity();
  acc.backward(t.m1->forward(X()).sum() * inf + t.m2->forward(X()).sum());
  EXPECT_FALSE(acc.step(t.a));
  EXPECT_TRUE(acc.step(t.b));
  EXPECT_TRUE(at::equal(t.m1->fc->bias, a_before));
  EXPECT_TRUE(at::allclose(t.m2->fc->bias, b_before - 1)) << t.m2->fc->bias - b_before;
  EXPECT_EQ(acc.loss_scale(), 512.0);
  EXPECT_EQ(acc.skipped_steps(), 1);
}

// GradScaler grows the scale once per iteration (update()), not once per optimizer.
TEST(AcceleratorContractTest, ScaleGrowsOncePerIterationWithTwoOptimizers) {
  Accelerator acc(Scaled(1024, /*growth_interval=*/1));
  TwoModels t(acc);
  for (int it = 1; it <= 2; ++it) {
    acc.backward(t.m1->forward(X()).sum() + t.m2->forward(X()).sum());
    EXPECT_TRUE(acc.step(t.a));
    EXPECT_TRUE(acc.step(t.b));
    EXPECT_EQ(acc.loss_scale(), 1024.0 * (1 << it)) << "iteration " << it;
  }
}

TEST(AcceleratorContractTest, BackwardOfALossWithoutGradientNamesTheFix) {
  Accelerator acc(World1());
  Lin model = acc.prepare(Lin());
  try {
    acc.backward(model->forward(X()).sum().detach());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not require grad"), std::string::npos) << e.what();
  }
  try {
    acc.backward(model->forward(X()));  // [1, 2]: not a scalar
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pass a scalar"), std::string::npos) << e.what();
  }
}

TEST(AcceleratorContractTest, ReduceOfABoolTensorIsAnArgumentError) {
  Accelerator acc(World1());
  try {
    acc.reduce(at::ones({2}, at::kBool));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be reduced"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(at::equal(acc.reduce(at::ones({2})), at::ones({2})));  // still usable
}

// load_state leaves the state of a process restarted from the checkpoint: no gradients.
TEST(AcceleratorContractTest, LoadStateMidWindowDropsTheWindowsGradients) {
  accel::testing::TempDir dir;
  Accelerator acc(World1(2));
  Lin model = acc.prepare(Lin());
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  acc.prepare(opt);
  acc.save_state((std::filesystem::path(dir.path()) / "ckpt").string());
  {
    auto guard = acc.accumulate(model);
    acc.backward(model->forward(X()).sum());
  }
  ASSERT_TRUE(model->fc->bias.grad().defined());
  acc.load_state((std::filesystem::path(dir.path()) / "ckpt").string());
  EXPECT_FALSE(model->fc->bias.grad().defined());
}

// load_state replaces the optimizer's state with the checkpoint's, as a restarted process has
// it: momentum buffers created after the save are gone (LibTorch's Optimizer::load alone only
// overwrites the entries the archive has). Found by tests/testing/contract/ddp_check.py.
TEST(AcceleratorContractTest, LoadStateDropsMomentumCreatedAfterTheSave) {
  accel::testing::TempDir dir;
  const std::string ckpt = (std::filesystem::path(dir.path()) / "ckpt").string();
  auto one_step = [](Accelerator& acc, Lin& model, torch::optim::SGD& opt) {
    acc.backward(model->forward(X()).sum());
    acc.step(opt);
  };
  Accelerator acc(World1());
  Lin model = acc.prepare(Lin());
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  acc.prepare(opt);
  acc.save_state(ckpt);  // before any step: no momentum buffer in the checkpoint
  one_step(acc, model, opt);
  one_step(acc, model, opt);
  acc.load_state(ckpt);
  one_step(acc, model, opt);
  // A process restarted from the checkpoint: the same parameters, a fresh optimizer.
  Accelerator fresh_acc(World1());
  Lin fresh = fresh_acc.prepare(Lin());
  torch::optim::SGD fresh_opt(fresh->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  fresh_acc.prepare(fresh_opt);
  fresh_acc.load_state(ckpt);
  one_step(fresh_acc, fresh, fresh_opt);
  EXPECT_TRUE(at::equal(model->fc->weight, fresh->fc->weight))
      << model->fc->weight << " vs restarted " << fresh->fc->weight;
}

}  // namespace
}  // namespace accel
