// GradSync's promises to LibTorch code (issue 23), against the fake communicator: gradients that
// LibTorch's Optimizer::zero_grad can detach_(), a gradient nobody zeroed is summed once (not
// world times) in the next window, tied parameters refused, sparse gradients, a late gradient
// after its bucket was launched, a cancelled backward that had issued collectives, and a
// collective issued from inside backward.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>
#include <torch/optim/sgd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "accel/error.h"
#include "tests/unit/worker/ddp/grad_sync_fixtures.h"
#include "worker/src/ddp/grad_sync.h"

namespace accel::worker {
namespace {

using namespace testing;  // NOLINT: the fixtures of this test

TEST(GradSyncContractTest, OptimizerZeroGradDetachesBoundGradients) {
  Model m = Chain3();
  FakeCommunicator comm;
  GradSync sync(m.params, comm, SmallBuckets(/*overlap=*/false));
  const at::Tensor x = at::randn({5, 8});
  SyncStep(sync, m, x);
  torch::optim::SGD opt(m.params, torch::optim::SGDOptions(0.1));
  // LibTorch 1.13: detach_() then zero_(). On an autograd view of the bucket detach_() throws
  // "Can't detach views in-place".
  ASSERT_NO_THROW(opt.zero_grad());
  const void* before = m.params[0].grad().data_ptr();
  SyncStep(sync, m, x);
  if (m.params[0].grad().defined()) {
    EXPECT_EQ(m.params[0].grad().data_ptr(), before);
  }
}

// The fake all-reduce doubles (a peer with the same gradients): a reduced gradient is 2 g.
TEST(GradSyncContractTest, GradientNobodyZeroedIsNotSummedAgain) {
  Model m = Chain3();
  FakeCommunicator comm;
  comm.scale_ = 2.0f;
  GradSync sync(m.params, comm, SmallBuckets(/*overlap=*/true));
  const at::Tensor x1 = at::randn({5, 8}), x2 = at::randn({5, 8});
  auto local = [&](const at::Tensor& x) {
    return torch::autograd::grad({m.Loss(x)}, {m.params[0]})[0];
  };
  const at::Tensor g1 = local(x1), g2 = local(x2);
  SyncStep(sync, m, x1);
  EXPECT_TRUE(at::allclose(m.params[0].grad(), 2 * g1));
  // No ZeroGrad (a parameter in no optimizer, or two backward passes per step): the second
  // window adds its own reduced gradient to the first one, once.
  SyncStep(sync, m, x2);
  EXPECT_TRUE(at::allclose(m.params[0].grad(), 2 * g1 + 2 * g2, 1e-5, 1e-6))
      << (m.params[0].grad() - 2 * g1 - 2 * g2).abs().max().item<float>();
  // After ZeroGrad nothing is carried: the next window is its own gradient only.
  sync.ZeroGrad(nullptr);
  SyncStep(sync, m, x1);
  EXPECT_TRUE(at::allclose(m.params[0].grad(), 2 * g1, 1e-5, 1e-6));
}

TEST(GradSyncContractTest, TiedParameterListedTwiceIsRefused) {
  Model m = Chain3();
  FakeCommunicator comm;
  std::vector<at::Tensor> params = m.params;
  params.push_back(m.params[1]);
  try {
    GradSync sync(params, comm, SmallBuckets(false));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("listed twice"), std::string::npos) << e.what();
  }
}

TEST(GradSyncContractTest, SparseGradientIsDensifiedIntoTheBucket) {
  at::Tensor table = at::randn({10, 4}).requires_grad_();
  FakeCommunicator comm;
  comm.scale_ = 2.0f;  // a peer with the same gradients: a reduced gradient is 2 g
  GradSync sync({table}, comm, SmallBuckets(false));
  const at::Tensor idx = at::tensor(std::vector<int64_t>{1, 3, 3});
  for (int pass = 0; pass < 2; ++pass) {
    at::Tensor loss = at::embedding(table, idx, -1, false, /*sparse=*/true).sum();
    sync.BeginBackward(true, loss);
    ASSERT_NO_THROW(loss.backward());
    sync.EndBackward();
    ASSERT_TRUE(table.grad().defined());
    EXPECT_FALSE(table.grad().is_sparse()) << "pass " << pass;
  }
  // Per pass and rank, row 1 is used once and row 3 twice: the first pass leaves 2 g; the second
  // adds its own reduced 2 g to that once (not re-summed: DDP's average of prev + local).
  at::Tensor want = at::zeros({10, 4});
  want[1].fill_(4.0);
  want[3].fill_(8.0);
  EXPECT_TRUE(at::allclose(table.grad(), want)) << table.grad();
  EXPECT_EQ(comm.sizes().size(), 2u);  // one all-reduce per pass: the gradient is in the bucket
}

// Activation checkpointing's re-entrant recomputation: a function whose backward runs a nested
// backward through `w`, which the outer graph does not reach (w is captured, not an input).
struct Captured {
  at::Tensor w;
};
struct Recompute : torch::autograd::Function<Recompute> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, at::Tensor x, Captured* c) {
    ctx->saved_data["w"] = c->w;
    ctx->save_for_backward({x});
    return x.detach().matmul(c->w.detach());
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    at::Tensor w = ctx->saved_data["w"].toTensor();
    at::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_();
    {
      at::AutoGradMode enable(true);
      torch::autograd::backward({x.matmul(w)}, {grads[0]});
    }
    return {x.grad(), at::Tensor()};
  }
};

// Returns w1's gradient after one checkpointed sync pass, or the error.
std::string CheckpointedPass(bool overlap, at::Tensor* w1_grad) {
  torch::manual_seed(3);
  at::Tensor w0 = at::randn({4, 4}).requires_grad_();
  at::Tensor w1 = at::randn({4, 4}).requires_grad_();
  FakeCommunicator comm;
  GradSyncOptions o = SmallBuckets(overlap);
  o.first_bucket_bytes = 1;  // one bucket per parameter: w1's is ready (unreachable) at once
  o.bucket_bytes = 1;
  GradSync sync({w0, w1}, comm, o);
  Captured c{w1};
  at::Tensor loss = Recompute::apply(at::randn({3, 4}).matmul(w0), &c).sum();
  sync.BeginBackward(true, loss);
  try {
    loss.backward();
    sync.EndBackward();
  } catch (const std::exception& e) {
    sync.CancelBackward();
    return e.what();
  }
  *w1_grad = w1.grad();
  return "";
}

TEST(GradSyncContractTest, ReentrantBackwardFailsClearlyWithOverlapAndWorksWithout) {
  at::Tensor grad;
  const std::string error = CheckpointedPass(/*overlap=*/true, &grad);
  EXPECT_NE(error.find("ACCEL_OVERLAP=off"), std::string::npos) << error;
  ASSERT_EQ(CheckpointedPass(/*overlap=*/false, &grad), "");
  ASSERT_TRUE(grad.defined());
  EXPECT_GT(grad.abs().sum().item<float>(), 0.0f);  // the nested gradient was summed
}

TEST(GradSyncContractTest, CancelAfterCollectivesWereIssuedAbortsTheCommunicator) {
  Model m = Chain3();
  FakeCommunicator comm;
  GradSync sync(m.params, comm, SmallBuckets(/*overlap=*/true));
  // Nothing reaches the parameters from this root: every bucket is ready at once and the first
  // two are handed to the communication thread before backward even starts.
  at::Tensor root = at::ones({1}, at::requires_grad());
  sync.BeginBackward(true, root * 2);
  EXPECT_EQ(comm.WaitFor(2), 2u);
  EXPECT_TRUE(sync.CancelBackward());
  EXPECT_TRUE(comm.aborted_.load());
  // A cancel before anything was issued keeps the communicator.
  FakeCommunicator quiet;
  GradSync idle(m.params, quiet, SmallBuckets(/*overlap=*/true));
  idle.BeginBackward(false, m.Loss(at::randn({5, 8})));
  EXPECT_FALSE(idle.CancelBackward());
  EXPECT_FALSE(quiet.aborted_.load());
}

// The communication thread's all-reduces start 100 ms late: a collective issued from inside
// backward on the training thread would overtake the bucket launched before it.
class SlowCommThread : public FakeCommunicator {
 public:
  void AllReduce(at::Tensor& t, ReduceOp op, milliseconds timeout) override {
    if (std::this_thread::get_id() != training_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FakeCommunicator::AllReduce(t, op, timeout);
  }

 private:
  const std::thread::id training_ = std::this_thread::get_id();
};

// As a SyncBatchNorm-style backward function does (through the Accelerator's
// OrderedCommunicator): identity forward, an all-reduce of 3 numbers in backward.
struct CollectiveInBackward : torch::autograd::Function<CollectiveInBackward> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, at::Tensor x, GradSync* sync,
                            Communicator* comm) {
    ctx->saved_data["sync"] = reinterpret_cast<std::int64_t>(sync);
    ctx->saved_data["comm"] = reinterpret_cast<std::int64_t>(comm);
    return x.clone();
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    reinterpret_cast<GradSync*>(ctx->saved_data["sync"].toInt())->OrderCollective();
    at::Tensor stats = at::ones({3});
    reinterpret_cast<Communicator*>(ctx->saved_data["comm"].toInt())
        ->AllReduce(stats, ReduceOp::kSum, std::chrono::seconds(10));
    return {grads[0], at::Tensor(), at::Tensor()};
  }
};

TEST(GradSyncContractTest, CollectiveInsideBackwardFollowsTheBucketsLaunchedBeforeIt) {
  Model m = Chain3();  // buckets {w2} (8 elements), {w1} (16), {w0} (32, the final one)
  SlowCommThread comm;
  GradSync sync(m.params, comm, SmallBuckets(/*overlap=*/true));
  const at::Tensor x = at::randn({5, 8});
  at::Tensor h = x.matmul(m.params[0]).tanh().matmul(m.params[1]).tanh();
  h = CollectiveInBackward::apply(h, &sync, &comm);
  const at::Tensor loss = h.matmul(m.params[2]).tanh().pow(2).sum();
  sync.BeginBackward(/*sync=*/true, loss);
  loss.backward();  // w2's bucket is launched, then the collective, then w1's and w0's
  sync.EndBackward();
  // Every rank issues them in this order, whatever the communication thread's timing.
  EXPECT_EQ(comm.sizes(), (std::vector<int64_t>{8, 3, 16, 32 + 3}));  // + the used-bitmap
}

}  // namespace
}  // namespace accel::worker
