// GradSync test fixtures: a fake communicator and a small chain model (grad_sync_test.cc,
// grad_sync_contract_test.cc).
#ifndef ACCEL_TESTS_UNIT_WORKER_DDP_GRAD_SYNC_FIXTURES_H_
#define ACCEL_TESTS_UNIT_WORKER_DDP_GRAD_SYNC_FIXTURES_H_

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "accel/communicator.h"
#include "accel/error.h"
#include "worker/src/ddp/grad_sync.h"

namespace accel::worker::testing {

using std::chrono::milliseconds;

// Records every all-reduce (size and thread); the result is scale x input + offset (a stand-in
// for the sum over ranks: offset 1 plays a peer that used every parameter). Optionally blocks
// its first call until Release(), ignoring the deadline like a stuck backend.
class FakeCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string name() const override { return "fake"; }
  void AllReduce(at::Tensor& t, ReduceOp op, milliseconds) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (fail_) throw Error("all-reduce", "(fake)", "peer lost");
    EXPECT_EQ(op, ReduceOp::kSum);  // the 1/world factor is folded into the loss
    const bool first = sizes_.empty();
    sizes_.push_back(t.numel());
    threads_.push_back(std::this_thread::get_id());
    cv_.notify_all();
    if (first && block_first_) cv_.wait(lock, [&] { return released_; });
    t.mul_(scale_).add_(offset_);
  }
  void Broadcast(at::Tensor&, int, milliseconds) override {}
  at::Tensor AllGather(const at::Tensor& t, milliseconds) override { return t; }
  void Barrier(milliseconds) override {}
  void Abort() override { aborted_ = true; }

  // Waits (up to `limit`) until `n` all-reduces started; returns how many did.
  size_t WaitFor(size_t n, milliseconds limit = milliseconds(3000)) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, limit, [&] { return sizes_.size() >= n; });
    return sizes_.size();
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  std::vector<int64_t> sizes() {
    std::lock_guard<std::mutex> lock(mu_);
    return sizes_;
  }
  std::vector<std::thread::id> threads() {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int64_t> sizes_;
  std::vector<std::thread::id> threads_;
  float scale_ = 1.0f;
  float offset_ = 0.0f;
  bool fail_ = false;
  bool block_first_ = false;
  bool released_ = false;
  std::atomic<bool> aborted_{false};
};

// A chain x -> tanh(x W0) -> ... -> sum of squares over the `used` parameters (registration
// order), each a [in, out] matrix; `unused` ones are registered but never touched.
struct Model {
  std::vector<at::Tensor> params;
  std::vector<bool> used;
  void Add(std::vector<int64_t> shape, bool in_graph = true) {
    params.push_back(at::randn(shape).requires_grad_());
    used.push_back(in_graph);
  }
  at::Tensor Loss(const at::Tensor& x) const {
    at::Tensor h = x;
    for (size_t i = 0; i < params.size(); ++i) {
      if (used[i]) h = h.matmul(params[i]).tanh();
    }
    return h.pow(2).sum();
  }
};

// w0 [8x4], w1 [4x4], w2 [4x2]: with SmallBuckets, three buckets {w2}, {w1}, {w0}.
inline Model Chain3() {
  Model m;
  m.Add({8, 4});
  m.Add({4, 4});
  m.Add({4, 2});
  return m;
}

inline GradSyncOptions SmallBuckets(bool overlap) {
  GradSyncOptions o;
  o.first_bucket_bytes = 32;  // the last parameter (32 bytes) alone, then 64-byte buckets
  o.bucket_bytes = 64;
  o.overlap = overlap;
  o.timeout = std::chrono::seconds(10);
  return o;
}

// One synchronising backward pass.
inline void SyncStep(GradSync& sync, const Model& m, const at::Tensor& x) {
  at::Tensor loss = m.Loss(x);
  sync.BeginBackward(/*sync=*/true, loss);
  loss.backward();
  sync.EndBackward();
}

}  // namespace accel::worker::testing

#endif  // ACCEL_TESTS_UNIT_WORKER_DDP_GRAD_SYNC_FIXTURES_H_
