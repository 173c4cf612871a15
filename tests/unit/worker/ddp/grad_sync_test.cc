// GradSync against a fake communicator: bucket order, overlap with backward, which thread runs
// which bucket, accumulation (no communication off the boundary), gradients as bucket views,
// unused parameters (found from the graph, agreed through the used-bitmap), errors and deadlines.
#include "worker/src/ddp/grad_sync.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "accel/communicator.h"
#include "accel/error.h"
#include "tests/unit/worker/ddp/grad_sync_fixtures.h"

namespace accel::worker {
namespace {

using std::chrono::milliseconds;

using namespace testing;  // NOLINT: the fixtures of this test

TEST(GradSyncTest, BucketsInReverseOrderAndOverlapBackward) {
  Model m = Chain3();
  FakeCommunicator comm;
  GradSync sync(m.params, comm, SmallBuckets(/*overlap=*/true));
  ASSERT_EQ(sync.buckets(), (std::vector<std::vector<size_t>>{{2}, {1}, {0}}));
  at::Tensor loss = m.Loss(at::randn({5, 8}));
  sync.BeginBackward(true, loss);
  loss.backward();
  // The first two buckets were all-reduced by the communication thread during backward; the
  // final one is never handed over: it waits for EndBackward, on this thread.
  EXPECT_EQ(comm.WaitFor(2), 2u);
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(comm.sizes().size(), 2u);
  sync.EndBackward();
  // The final bucket carries the used-bitmap (one float per parameter) after its gradients.
  EXPECT_EQ(comm.sizes(), (std::vector<int64_t>{8, 16, 32 + 3}));
  const auto threads = comm.threads();
  EXPECT_NE(threads[0], std::this_thread::get_id());
  EXPECT_EQ(threads[2], std::this_thread::get_id());
}

TEST(GradSyncTest, WithoutOverlapNothingIsSentBeforeTheEnd) {
  Model m = Chain3();
  FakeCommunicator comm;
  GradSync sync(m.params, comm, SmallBuckets(/*overlap=*/false));
  at::Tensor loss = m.Loss(at::randn({5, 8}));
  sync.BeginBackward(true, loss);
  loss.backward();
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_TRUE(comm.sizes().empty());
  sync.EndBackward();
  EXPECT_EQ(comm.sizes().size(), sync.buckets().size());
  for (auto id : comm.threads()) EXPECT_EQ(id, std::this_thread::get_id());
}

TEST(GradSyncTest, GradientsAreBucketViewsAndAccumulationDefersCommunication) {
  Model m = Chain3();
  FakeCommunicator comm;
  comm.scale_ = 0.5f;
  GradSyncOptions one_bucket = SmallBuckets(true);
  one_bucket.first_bucket_bytes = 1 << 20;
  GradSync sync(m.params, comm, one_bucket);
  ASSERT_EQ(sync.buckets().size(), 1u);
  at::Tensor x = at::randn({5, 8});
  // Micro-step 1 of 2: gradients accumulate locally, nothing is sent.
  at::Tensor loss = m.Loss(x);
  sync.BeginBackward(false, loss);
  loss.backward();
  sync.EndBackward();
  EXPECT_TRUE(comm.sizes().empty());
  // Micro-step 2: the accumulated sum is reduced once, in place.
  loss = m.Loss(x);
  sync.BeginBackward(true, loss);
  loss.backward();
  std::vector<at::Tensor> local;
  for (auto& p : m.params) local.push_back(p.grad().clone());
  sync.EndBackward();
  EXPECT_EQ(comm.sizes(), (std::vector<int64_t>{8 * 4 + 4 * 4 + 4 * 2 + 3}));
  for (size_t i = 0; i < m.params.size(); ++i) {
    EXPECT_TRUE(at::allclose(m.params[i].grad(), local[i] * 0.5)) << "param " << i;
    // Every gradient lives in the one bucket's storage: no copy in, no copy out.
    EXPECT_TRUE(m.params[i].grad().is_alias_of(m.params[0].grad())) << "param " << i;
  }
  // Zeroing is one fill of the bucket; the gradients stay views and keep accumulating in place.
  sync.ZeroGrad(nullptr);
  for (auto& p : m.params) EXPECT_TRUE(at::equal(p.grad(), at::zeros_like(p))) << p;
  SyncStep(sync, m, x);
  for (size_t i = 0; i < m.params.size(); ++i) {
    EXPECT_TRUE(at::allclose(m.params[i].grad(), local[i] * 0.25)) << "param " << i;
    EXPECT_TRUE(m.params[i].grad().is_alias_of(m.params[0].grad())) << "param " << i;
  }
}

// Review finding 6: a bucket holding a parameter that this backward never reaches is launched
// as soon as backward starts (zeros), so it does not hold back the buckets after it.
TEST(GradSyncTest, UnusedParameterDoesNotBlockLaterBuckets) {
  Model m;
  m.Add({8, 4});
  m.Add({4, 4});
  m.Add({16}, /*in_graph=*/false);
  m.Add({4, 4});
  m.Add({4, 2});
  FakeCommunicator comm;
  GradSync sync(m.params, comm, SmallBuckets(true));
  ASSERT_EQ(sync.buckets(), (std::vector<std::vector<size_t>>{{4}, {3}, {2}, {1}, {0}}));
  at::Tensor loss = m.Loss(at::randn({5, 8}));
  sync.BeginBackward(true, loss);
  loss.backward();
  EXPECT_EQ(comm.WaitFor(4), 4u) << "buckets after the unused parameter's were held back";
  sync.EndBackward();
  EXPECT_EQ(comm.sizes(), (std::vector<int64_t>{8, 16, 16, 16, 32 + 5}));
  // Unused on every rank (the fake's peers add nothing): it keeps no gradient, so an optimizer
  // with weight decay leaves it alone, as a single process would.
  EXPECT_FALSE(m.params[2].grad().defined());
  for (size_t i : {0, 1, 3, 4}) EXPECT_TRUE(m.params[i].grad().defined()) << i;
}

TEST(GradSyncTest, LocallyUnusedButUsedElsewhereGetsTheReducedGradient) {
  Model m;
  m.Add({8, 4});
  m.Add({3}, /*in_graph=*/false);
  m.Add({4, 2});
  FakeCommunicator comm;
  comm.offset_ = 1.0f;  // a peer whose gradient is 1 everywhere, and which used every parameter
  GradSync sync(m.params, comm, SmallBuckets(true));
  SyncStep(sync, m, at::randn({5, 8}));
  ASSERT_TRUE(m.params[1].grad().defined());
  EXPECT_TRUE(at::equal(m.params[1].grad(), at::ones({3})));
}

// Review finding 3: a plain loss.backward() on a prepared module would leave the replicas
// silently out of sync; it fails loudly instead.
TEST(GradSyncTest, BackwardOutsideAccBackwardFailsLoudly) {
  Model m = Chain3();
  FakeCommunicator comm;
  GradSync sync(m.params, comm, SmallBuckets(true));
  try {
    m.Loss(at::randn({2, 8})).backward();
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("acc.backward(loss)"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(comm.sizes().empty());
  SyncStep(sync, m, at::randn({2, 8}));  // the proper path still works afterwards
  EXPECT_EQ(comm.sizes().size(), 3u);
}

// Review finding 4: when backward ends while the communication thread is still busy, the final
// bucket is run by the training thread, not taken by the communication thread.
TEST(GradSyncTest, FinalBucketRunsOnTheTrainingThreadWhileTheCommThreadIsBusy) {
  Model m = Chain3();
  FakeCommunicator comm;
  comm.block_first_ = true;
  GradSync sync(m.params, comm, SmallBuckets(true));
  at::Tensor loss = m.Loss(at::randn({5, 8}));
  sync.BeginBackward(true, loss);
  loss.backward();
  ASSERT_EQ(comm.WaitFor(1), 1u);
  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(300));
    comm.Release();
  });
  sync.EndBackward();
  releaser.join();
  EXPECT_EQ(comm.sizes(), (std::vector<int64_t>{8, 16, 32 + 3}));  // still strictly in order
  const auto threads = comm.threads();
  ASSERT_EQ(threads.size(), 3u);
  EXPECT_NE(threads[0], std::this_thread::get_id());
  EXPECT_EQ(threads[2], std::this_thread::get_id()) << "the final bucket went to the comm thread";
}

// Review finding 5: after a deadline, nothing of the failed step runs later: the next step
// all-reduces each of its buckets exactly once.
TEST(GradSyncTest, NoStaleBucketRunsAfterADeadline) {
  Model m = Chain3();
  FakeCommunicator comm;
  comm.block_first_ = true;
  GradSyncOptions o = SmallBuckets(true);
  o.timeout = milliseconds(100);
  o.backend_grace = milliseconds(100);
  GradSync sync(m.params, comm, o);
  at::Tensor x = at::randn({5, 8});
  EXPECT_THROW(SyncStep(sync, m, x), Error);
  comm.Release();  // the stuck collective returns after all
  std::this_thread::sleep_for(milliseconds(200));
  const size_t before = comm.sizes().size();
  EXPECT_EQ(before, 1u) << "stale buckets ran after the failed step";
  SyncStep(sync, m, x);
  const auto sizes = comm.sizes();
  EXPECT_EQ(std::vector<int64_t>(sizes.begin() + static_cast<std::ptrdiff_t>(before), sizes.end()),
            (std::vector<int64_t>{8, 16, 32 + 3}));
}

// LibTorch's module.load() (so Accelerator::load_state) replaces each parameter's data with
// set_(), which gives the parameter a new gradient accumulator: the hooks must follow it, or
// every later backward leaves the replicas unsynchronised.
TEST(GradSyncTest, HooksFollowANewGradAccumulatorAfterSet) {
  Model m = Chain3();
  FakeCommunicator comm;
  comm.scale_ = 0.5f;
  GradSync sync(m.params, comm, SmallBuckets(true));
  const at::Tensor x = at::randn({5, 8});
  SyncStep(sync, m, x);
  sync.ZeroGrad(nullptr);
  {
    at::NoGradGuard no_grad;
    for (auto& p : m.params) p.set_(p.detach().clone());
  }
  const size_t before = comm.sizes().size();
  SyncStep(sync, m, x);
  EXPECT_EQ(comm.sizes().size() - before, 3u);
  // The reference: the same loss's local gradients, without GradSync.
  std::vector<at::Tensor> local;
  {
    std::vector<at::Tensor> copies;
    for (auto& p : m.params) copies.push_back(p.detach().clone().requires_grad_());
    Model ref;
    ref.params = copies;
    ref.used = m.used;
    ref.Loss(x).backward();
    for (auto& c : copies) local.push_back(c.grad());
  }
  for (size_t i = 0; i < m.params.size(); ++i) {
    ASSERT_TRUE(m.params[i].grad().defined()) << i;
    EXPECT_TRUE(at::allclose(m.params[i].grad(), local[i] * 0.5))
        << "param " << i << " not reduced";
  }
}

TEST(GradSyncTest, CommunicationErrorsSurfaceAsAccelError) {
  Model m = Chain3();
  FakeCommunicator comm;
  comm.fail_ = true;
  GradSync sync(m.params, comm, SmallBuckets(true));
  try {
    SyncStep(sync, m, at::randn({2, 8}));
    FAIL() << "expected accel::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("all-reduce gradients"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("peer lost"), std::string::npos) << e.what();
  }
}

TEST(GradSyncTest, PerBucketTimingsUnderTheDebugFlag) {
  Model m = Chain3();
  FakeCommunicator comm;
  GradSyncOptions o = SmallBuckets(true);
  o.timings = true;
  GradSync sync(m.params, comm, o);
  SyncStep(sync, m, at::randn({5, 8}));
  const auto timings = sync.last_timings();
  ASSERT_EQ(timings.size(), 3u);
  EXPECT_FALSE(timings[2].on_comm_thread);
  for (const auto& t : timings) {
    EXPECT_GE(t.start_us, t.ready_us);
    EXPECT_GE(t.end_us, t.start_us);
  }
}

TEST(GradSyncTest, RejectsNonLeafParameters) {
  FakeCommunicator comm;
  at::Tensor leaf = at::ones({2}).requires_grad_();
  std::vector<at::Tensor> params = {leaf * 2};
  EXPECT_THROW(GradSync(params, comm, SmallBuckets(true)), Error);
}

}  // namespace
}  // namespace accel::worker
