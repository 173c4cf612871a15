// GradSync: DDP gradient averaging for one module's parameters.
//
// At construction the parameters are split into buckets (bucket_plan.h) and a post hook is added
// to each parameter's gradient accumulator (the AccumulateGrad node, as torch's C++ Reducer does):
// it fires once the parameter's .grad holds this backward's gradient. On a sync backward, a
// bucket whose parameters are all ready is copied into its flat buffer and handed to a
// communication thread, which all-reduces it (average) while autograd keeps computing the rest
// (overlap). Buckets are launched strictly in order so every rank issues the same collectives in
// the same order. EndBackward() launches what is left, with zeros for parameters that got no
// gradient (unused this step: handled, never waited on), runs the still-queued buckets itself
// once the communication thread is idle (the final bucket is never handed over: it is ready only
// when backward is over), waits for every bucket and writes the averaged values back into .grad.
//
// Threading: hooks run on autograd threads; Begin/EndBackward on the training thread; all shared
// state is guarded by mu_. Owns the communication thread (joined in the destructor) and shares
// the communicator (which must outlive it). Errors throw accel::Error from EndBackward.
#ifndef ACCEL_WORKER_DDP_GRAD_SYNC_H_
#define ACCEL_WORKER_DDP_GRAD_SYNC_H_

#include <ATen/core/Tensor.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "accel/communicator.h"
#include "accel/defaults.h"
#include "worker/src/progress_file.h"

namespace torch::autograd {
struct Node;
}  // namespace torch::autograd

namespace accel::worker {

struct GradSyncOptions {
  std::int64_t first_bucket_bytes = defaults::kFirstBucketBytes;
  std::int64_t bucket_bytes = defaults::kBucketBytes;
  bool overlap = true;  // false: launch every bucket in EndBackward (for measuring overlap)
  std::chrono::milliseconds timeout = defaults::kCollectiveTimeout;
  ProgressFile* progress = nullptr;  // may be null: times EndBackward as the training thread's wait
};

class GradSync {
 public:
  // `params` in registration order; each must be a leaf that requires grad.
  GradSync(std::vector<at::Tensor> params, Communicator& comm, GradSyncOptions options);
  ~GradSync();
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  // Starts a backward pass; `sync` = communicate this time (accumulation boundary).
  void BeginBackward(bool sync);
  // Finishes it: launches the remaining buckets, waits for all (each collective has the
  // deadline options.timeout) and writes averaged gradients back. No-op when not syncing.
  void EndBackward();

  // The bucket plan (indices into params, launch order); for tests and logs.
  const std::vector<std::vector<std::size_t>>& buckets() const { return plan_; }

 private:
  struct Bucket {
    std::vector<std::size_t> params;
    std::vector<std::int64_t> offsets;  // element offset of each param in flat
    at::Tensor flat;
    int pending = 0;
    bool done = false;
  };

  void MarkReady(std::size_t param);
  void FillBucketLocked(Bucket& bucket);
  // Fills and queues every ready bucket, in order.
  void LaunchReadyLocked(bool wake_comm_thread);
  // Pops the next queued bucket and all-reduces it with mu_ released (busy_ meanwhile).
  void RunNextLocked(std::unique_lock<std::mutex>& lock);
  void CommLoop();

  std::vector<at::Tensor> params_;
  Communicator& comm_;
  GradSyncOptions options_;
  std::vector<std::vector<std::size_t>> plan_;
  std::vector<std::size_t> bucket_of_;  // param -> bucket
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<std::uintptr_t> hook_keys_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Bucket> buckets_;
  std::vector<bool> ready_;
  bool active_ = false;  // inside a sync backward
  std::size_t next_launch_ = 0;
  std::deque<std::size_t> queue_;
  std::exception_ptr error_;
  bool busy_ = false;  // a collective is running (on the comm thread or in EndBackward)
  bool stop_ = false;
  std::thread comm_thread_;
};

}  // namespace accel::worker

#endif  // ACCEL_WORKER_DDP_GRAD_SYNC_H_
