// GradSync: DDP gradient synchronisation for the parameters of the prepared modules.
//
// The parameters are split into buckets (bucket_plan.h); each parameter's .grad becomes its view
// into its bucket's flat storage (bucket.h), so autograd accumulates straight into what is
// all-reduced. The caller folds 1/(world x accumulation) into the loss, so the all-reduce is a
// plain SUM and nothing is divided or copied afterwards.
//
// A post hook on each parameter's gradient accumulator (the AccumulateGrad node, as torch's
// Reducer does) marks it ready. On a sync backward, BeginBackward walks the graph from the loss:
// parameters it cannot reach get no gradient this pass and are ready at once (their slots hold
// what earlier micro-steps accumulated, or zeros), so they never hold back later buckets. A
// bucket whose parameters are all ready is launched, strictly in order so every rank issues the
// same collectives in the same order. With overlap on, up to two launched buckets are handed to
// the communication thread (one running, the next queued) while autograd keeps computing; the
// final bucket is never handed over. EndBackward stops the hand-over, waits for the
// communication thread's buckets and runs every remaining one on the training thread.
//
// Windows: a window is the backward passes from one sync pass (exclusive) to the next
// (inclusive). What a gradient holds when its window starts (the reduced gradient of an earlier
// window that nobody zeroed: a parameter in no optimizer, two backward passes per step, a step
// without zero_grad) is already the same on every rank; like DDP, which divides the whole .grad
// by the world size before its SUM, the window's first BeginBackward multiplies that content by
// 1/world so the sum gives it back once instead of world times. Gradients zeroed by ZeroGrad
// carry nothing and cost nothing.
//
// Unused parameters: the final bucket carries a used-bitmap (was the parameter used on this rank
// in this window, or did it carry a gradient into it), summed with the gradients. A parameter no
// rank used keeps the gradient it had (none, or zeros), as DDP leaves a globally unused
// parameter alone; after ZeroGrad that is what the LibTorch optimizer's zero_grad() would leave
// (none on LibTorch 2.x, zeros on 1.13). One used elsewhere gets the reduced gradient.
//
// CUDA: the bucket's ready event is recorded on the stream of the thread that filled it (the
// autograd thread's, where the gradients were produced) and the thread that runs the collective
// makes its own stream wait for it.
//
// Hooks follow a parameter's gradient accumulator: when its data is replaced (set_(), as
// LibTorch's module.load() does), BeginBackward moves the hook to the new accumulator.
//
// A backward outside BeginBackward/EndBackward (a plain loss.backward() on a prepared module)
// throws accel::Error from the hook instead of leaving the replicas silently out of sync. So does
// a gradient that arrives for a parameter whose bucket was already handed to the communication
// thread (a backward re-entered from inside backward, as re-entrant activation checkpointing
// does: its parameters looked unreachable from the loss); without overlap nothing is sent before
// EndBackward and such gradients are summed normally.
//
// A collective issued from inside backward (a SyncBatchNorm-style backward function, through the
// Accelerator's OrderedCommunicator) first waits for OrderCollective: every bucket launched before
// it is issued before it, on every rank.
//
// Gradients are AliasSlot()s of the bucket storage, not autograd views: LibTorch's
// Optimizer::zero_grad (detach_() then zero_()) works on them; sparse gradients are densified.
//
// Errors: a failed collective, or the communication thread not finishing within timeout plus
// backend_grace, throws accel::Error from EndBackward; the pass is abandoned (a late result is
// ignored, nothing of it runs in the next pass) and BeginBackward waits for a still-blocked
// communication thread (deadline timeout plus backend_grace) before starting.
//
// Threading: hooks run on autograd threads; everything else on the training thread; shared
// state is guarded by mu_. Owns the communication thread (overlap only; joined in the
// destructor); the communicator must outlive it.
#ifndef ACCEL_WORKER_DDP_GRAD_SYNC_H_
#define ACCEL_WORKER_DDP_GRAD_SYNC_H_

#include <ATen/core/Tensor.h>
#include <c10/core/TensorImpl.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "accel/communicator.h"
#include "accel/defaults.h"
#include "worker/src/ddp/bucket.h"
#include "worker/src/progress_file.h"

namespace torch::autograd {
struct Node;
}  // namespace torch::autograd

namespace accel::worker {

struct GradSyncOptions {
  std::int64_t first_bucket_bytes = defaults::kFirstBucketBytes;
  std::int64_t bucket_bytes = defaults::kBucketBytes;
  bool overlap = true;  // false: every bucket runs in EndBackward, on the training thread
  std::chrono::milliseconds timeout = defaults::kCollectiveTimeout;
  ProgressFile* progress = nullptr;  // may be null: times EndBackward as the training thread's wait
  // How much longer than `timeout` to wait for a backend that ignores its own deadline.
  std::chrono::milliseconds backend_grace = defaults::kCollectiveGrace;
  bool timings = false;  // record per-bucket timings (last_timings)
  // What ZeroGrad stands for when no rank uses the parameter before the next sync: true, no
  // gradient (LibTorch 2.x's zero_grad); false, zeros (1.13's).
  bool zero_to_none = false;
};

// One bucket of the last sync pass, in microseconds since BeginBackward.
struct BucketTiming {
  std::int64_t elements = 0;
  double ready_us = 0;  // launched: every parameter ready
  double start_us = 0;  // collective started
  double end_us = 0;    // collective done
  bool on_comm_thread = false;
};

class GradSync {
 public:
  using ParamSet = std::unordered_set<const c10::TensorImpl*>;

  // `params` in registration order; each must be a dense leaf that requires grad.
  GradSync(std::vector<at::Tensor> params, Communicator& comm, GradSyncOptions options);
  ~GradSync();
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  // Starts a backward pass from `root` (the tensor backward() is called on); `sync` =
  // communicate this time (accumulation boundary).
  void BeginBackward(bool sync, const at::Tensor& root);
  // Finishes it: runs the remaining buckets, waits for all and settles unused parameters.
  // No-op when not syncing.
  void EndBackward();
  // Abandons the current pass (backward itself threw): stops handing buckets over and waits for
  // the communication thread. Returns true when a collective of this pass was already issued:
  // the ranks may then be a collective apart, so the communicator is aborted.
  bool CancelBackward();
  // Called before any collective that is not a bucket's (OrderedCommunicator), from any thread
  // but the communication thread, e.g. from inside backward by a SyncBatchNorm-style backward
  // function. During a syncing backward with overlap it first issues every bucket launched so far
  // (but the final one) and waits for them: which buckets those are follows from the order in
  // which autograd produced the gradients, the same on every rank, so every rank issues the
  // buckets and the other collective in one order. Otherwise (outside backward, without overlap,
  // where nothing is issued before EndBackward) it returns at once.
  void OrderCollective();

  // Zeroes the gradients of the parameters in `which` (all when null): one fill per bucket whose
  // parameters are all in it, else per parameter; gradients not bound to a bucket are reset.
  // Starts a new window for the used-bitmap.
  void ZeroGrad(const ParamSet* which);
  // Leaves every parameter without a gradient, as in a fresh process (load_state).
  void ResetGrads();
  bool Manages(const at::Tensor& param) const;

  // The bucket plan (indices into params, launch order); for tests and logs.
  const std::vector<std::vector<std::size_t>>& buckets() const { return plan_; }
  // Per-bucket timings of the last sync pass (options.timings; empty otherwise).
  std::vector<BucketTiming> last_timings() const;

 private:
  // Buckets handed to the communication thread at once: one running, the next one queued.
  static constexpr std::size_t kMaxInFlight = 2;

  using Clock = std::chrono::steady_clock;

  // Moves each parameter's hook to its current gradient accumulator (a new one after set_()).
  void RefreshHooks();
  void MarkReady(std::size_t param);
  void FillReadyLocked();
  void HandOverLocked();
  // Runs bucket b's collective with mu_ released.
  void RunLocked(std::unique_lock<std::mutex>& lock, std::size_t b, bool on_comm_thread);
  bool CommIdleLocked() const { return comm_queue_.empty() && !comm_running_; }
  // Waits for the communication thread to finish what it was handed; false at the deadline.
  bool WaitCommIdleLocked(std::unique_lock<std::mutex>& lock, Clock::duration limit);
  void AbandonLocked();
  // The window's first pass: carried gradients to 1/world, the used-bitmap restarted.
  void OpenWindowLocked();
  void WriteBitmapLocked();
  void SettleUnusedLocked();
  void RecordTimingsLocked();
  void CommLoop();

  std::vector<at::Tensor> params_;
  ParamSet param_set_;
  Communicator& comm_;
  const GradSyncOptions options_;
  std::vector<std::vector<std::size_t>> plan_;
  std::vector<std::size_t> bucket_of_;  // param -> bucket
  std::vector<std::size_t> slot_of_;    // param -> index within its bucket
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<std::uintptr_t> hook_keys_;
  at::Tensor separate_bitmap_;  // when the final bucket's dtype cannot hold the bitmap exactly

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Bucket> buckets_;
  std::vector<bool> ready_;    // this pass
  std::vector<bool> used_;     // this window (or carried a gradient into it)
  std::vector<bool> carried_;  // holds a reduced gradient to be divided at the window's start
  bool window_open_ = false;   // a backward ran since the last sync pass
  bool armed_ = false;         // between BeginBackward and EndBackward
  bool sync_ = false;
  bool closing_ = false;          // EndBackward took over: nothing more is handed over
  std::uint64_t generation_ = 0;  // bumped per pass: a late result of an old pass is ignored
  std::size_t next_fill_ = 0;     // next bucket to launch
  std::size_t next_hand_ = 0;     // next bucket not handed to the communication thread
  std::deque<std::size_t> comm_queue_;
  bool comm_running_ = false;
  std::exception_ptr error_;
  Clock::time_point pass_start_;
  std::vector<BucketTiming> timings_;
  bool stop_ = false;
  std::thread comm_thread_;
};

}  // namespace accel::worker

#endif  // ACCEL_WORKER_DDP_GRAD_SYNC_H_
