// Accelerator's training step in a world of 1: what sync_gradients() says once an accumulate()
// guard has ended, and which gradients clip_grad_norm() and step() unscale when the prepared
// modules and the optimizer hold different parameters.
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <optional>
#include <utility>
#include <vector>

#include "accel/accelerator.h"
#include "tests/testing/tiny_model.h"

namespace accel {
namespace {

using testing::Lin;
using testing::World1;

// Review finding 2: a non-syncing guard that has ended must not leave sync_gradients() false,
// or a later backward() outside accumulate() skips the all-reduce and step() does nothing.
TEST(AcceleratorStepTest, SyncIsRestoredWhenANonSyncingGuardEnds) {
  Accelerator acc(World1(2));
  Lin model = acc.prepare(Lin());
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  {
    auto guard = acc.accumulate(model);
    EXPECT_FALSE(guard.sync_gradients());
    EXPECT_FALSE(acc.sync_gradients());
  }
  EXPECT_TRUE(acc.sync_gradients()) << "outside accumulate() every backward syncs";
  acc.backward(model->forward(at::ones({1, 3})).sum());
  const at::Tensor before = model->fc->bias.detach().clone();
  EXPECT_TRUE(acc.step(opt));
  EXPECT_FALSE(at::equal(model->fc->bias, before));
  // Only the current micro-step's guard restores it: an older guard ending later does not, and
  // a moved-from guard ends nothing.
  std::optional<AccumulateGuard> older(acc.accumulate(model));  // micro-step 2: syncs
  auto current = acc.accumulate(model);                         // micro-step 3: does not
  older.reset();
  EXPECT_FALSE(acc.sync_gradients());
  { auto moved = std::move(current); }
  EXPECT_TRUE(acc.sync_gradients());
}

// Review finding 8: clip_grad_norm() unscales the prepared modules' gradients; step() must
// still unscale the optimizer's other parameters (here one that is in no prepared module).
TEST(AcceleratorStepTest, StepUnscalesWhatClipGradNormDidNot) {
  Options o = World1();
  o.loss_scaling = LossScaling::kDynamic;
  o.init_scale = 256;
  Accelerator acc(o);
  Lin model = acc.prepare(Lin());
  at::Tensor extra = at::zeros({2}).requires_grad_();  // trained, but in no prepared module
  std::vector<at::Tensor> params = model->parameters();
  params.push_back(extra);
  torch::optim::SGD opt(params, torch::optim::SGDOptions(0.5));
  acc.backward((model->forward(at::ones({1, 3})) + extra).sum());
  acc.clip_grad_norm(100.0);  // no clipping: the unscaled norm is 3
  EXPECT_TRUE(at::allclose(model->fc->bias.grad(), at::ones({2})));
  EXPECT_TRUE(acc.step(opt));
  // An unscaled gradient of 1 moves `extra` by -0.5; a still-scaled one by -128.
  EXPECT_TRUE(at::allclose(extra.detach(), at::full({2}, -0.5))) << extra;
}

// And the other way round: a prepared module's parameter the optimizer does not hold is
// unscaled once by clip_grad_norm and never again by step().
TEST(AcceleratorStepTest, NoGradientIsUnscaledTwice) {
  Options o = World1();
  o.loss_scaling = LossScaling::kDynamic;
  o.init_scale = 256;
  Accelerator acc(o);
  Lin model = acc.prepare(Lin());
  torch::optim::SGD opt({model->fc->weight}, torch::optim::SGDOptions(0.5));
  acc.backward(model->forward(at::ones({1, 3})).sum());
  acc.clip_grad_norm(100.0);
  const at::Tensor before = model->fc->weight.detach().clone();
  EXPECT_TRUE(acc.step(opt));
  EXPECT_TRUE(at::allclose(model->fc->weight.detach(), before - 0.5));
  EXPECT_TRUE(at::allclose(model->fc->bias.grad(), at::ones({2})));  // not divided again
}

}  // namespace
}  // namespace accel
