// GradSync against a fake communicator: bucket order, overlap with backward, accumulation
// (no communication off the boundary), unused parameters, write-back.
#include "worker/src/ddp/grad_sync.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "accel/communicator.h"
#include "accel/error.h"

namespace accel::worker {
namespace {

// Records every all-reduce; the result is `scale` x the input (a stand-in for the average).
class FakeCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string name() const override { return "fake"; }
  void AllReduce(at::Tensor& t, ReduceOp op, std::chrono::milliseconds) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_) throw Error("all-reduce", "(fake)", "peer lost");
    EXPECT_EQ(op, ReduceOp::kAvg);
    sizes_.push_back(t.numel());
    t.mul_(scale_);
    cv_.notify_all();
  }
  void Broadcast(at::Tensor&, int, std::chrono::milliseconds) override {}
  at::Tensor AllGather(const at::Tensor& t, std::chrono::milliseconds) override { return t; }
  void Barrier(std::chrono::milliseconds) override {}
  void Abort() override {}

  // Waits (up to 10 s) until `n` all-reduces happened; returns how many did.
  size_t WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return sizes_.size() >= n; });
    return sizes_.size();
  }
  std::vector<int64_t> sizes() {
    std::lock_guard<std::mutex> lock(mu_);
    return sizes_;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int64_t> sizes_;
  float scale_ = 1.0f;
  bool fail_ = false;
};

struct Model {
  // Registration order: unused [3] (last in reverse order), w0 [8x4], w1 [4x4], w2 [4x2].
  std::vector<at::Tensor> params = {
      at::randn({3}).requires_grad_(), at::randn({8, 4}).requires_grad_(),
      at::randn({4, 4}).requires_grad_(), at::randn({4, 2}).requires_grad_()};
  at::Tensor Loss(const at::Tensor& x) {
    const auto& p = params;
    return x.matmul(p[p.size() - 3])
        .tanh()
        .matmul(p[p.size() - 2])
        .tanh()
        .matmul(p.back())
        .pow(2)
        .sum();
  }
  void DropUnused() { params.erase(params.begin()); }
};

GradSyncOptions SmallBuckets(bool overlap) {
  GradSyncOptions o;
  o.first_bucket_bytes = 32;  // w2 (32 bytes) alone, then the rest in 64-byte buckets
  o.bucket_bytes = 64;
  o.overlap = overlap;
  o.timeout = std::chrono::seconds(10);
  return o;
}

TEST(GradSyncTest, BucketsInReverseOrderAndOverlapBackward) {
  Model m;
  FakeCommunicator comm;
  GradSync sync(m.params, comm, SmallBuckets(/*overlap=*/true));
  // Reverse registration order; 32-byte first bucket, then 64-byte buckets.
  const std::vector<std::vector<size_t>> expected = {{3}, {2}, {1}, {0}};
  ASSERT_EQ(sync.buckets(), expected);
  sync.BeginBackward(true);
  m.Loss(at::randn({5, 8})).backward();
  // The three buckets of used parameters were all-reduced during backward, before EndBackward;
  // the unused parameter's bucket waits for the end.
  EXPECT_EQ(comm.WaitFor(3), 3u);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(comm.sizes().size(), 3u);
  sync.EndBackward();
  EXPECT_EQ(comm.sizes(), (std::vector<int64_t>{8, 16, 32, 3}));
  EXPECT_TRUE(m.params[0].grad().defined());  // unused: zero-filled, never waited on
  EXPECT_TRUE(at::equal(m.params[0].grad(), at::zeros({3})));
}

TEST(GradSyncTest, WithoutOverlapNothingIsSentBeforeTheEnd) {
  Model m;
  m.DropUnused();
  FakeCommunicator comm;
  GradSync sync(m.params, comm, SmallBuckets(/*overlap=*/false));
  sync.BeginBackward(true);
  m.Loss(at::randn({5, 8})).backward();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(comm.sizes().empty());
  sync.EndBackward();
  EXPECT_EQ(comm.sizes().size(), sync.buckets().size());
}

TEST(GradSyncTest, ReducedValuesAreWrittenBackAndAccumulationDefersCommunication) {
  Model m;
  m.DropUnused();
  FakeCommunicator comm;
  comm.scale_ = 0.5f;
  GradSync sync(m.params, comm, SmallBuckets(true));
  at::Tensor x = at::randn({5, 8});
  // Micro-step 1 of 2: gradients accumulate locally, nothing is sent.
  sync.BeginBackward(false);
  m.Loss(x).backward();
  sync.EndBackward();
  EXPECT_TRUE(comm.sizes().empty());
  // Micro-step 2: the accumulated sum is reduced once.
  sync.BeginBackward(true);
  m.Loss(x).backward();
  std::vector<at::Tensor> local;
  for (auto& p : m.params) local.push_back(p.grad().clone());
  sync.EndBackward();
  int64_t total = 0;
  for (int64_t n : comm.sizes()) total += n;
  EXPECT_EQ(total, 8 * 4 + 4 * 4 + 4 * 2);  // every element exactly once
  for (size_t i = 0; i < m.params.size(); ++i) {
    EXPECT_TRUE(at::allclose(m.params[i].grad(), local[i] * 0.5)) << "param " << i;
  }
}

TEST(GradSyncTest, CommunicationErrorsSurfaceAsAccelError) {
  Model m;
  FakeCommunicator comm;
  comm.fail_ = true;
  GradSync sync(m.params, comm, SmallBuckets(true));
  sync.BeginBackward(true);
  m.Loss(at::randn({2, 8})).backward();
  try {
    sync.EndBackward();
    FAIL() << "expected accel::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("all-reduce gradients"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("peer lost"), std::string::npos) << e.what();
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
