#include "worker/src/ddp/grad_sync.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "accel/error.h"
#include "worker/src/ddp/bucket_plan.h"

namespace accel::worker {
namespace {

// Fires after AccumulateGrad wrote this backward's gradient into param.grad.
class ReadyHook : public torch::autograd::FunctionPostHook {
 public:
  explicit ReadyHook(std::function<void()> on_ready) : on_ready_(std::move(on_ready)) {}
  torch::autograd::variable_list operator()(
      const torch::autograd::variable_list& outputs,
      const torch::autograd::variable_list& /*inputs*/) override {
    on_ready_();
    return outputs;
  }

 private:
  std::function<void()> on_ready_;
};

int DtypeDeviceKey(const at::Tensor& t) {
  return static_cast<int>(t.scalar_type()) * 4096 + static_cast<int>(t.device().type()) * 256 +
         (t.device().index() + 1);
}

}  // namespace

GradSync::GradSync(std::vector<at::Tensor> params, Communicator& comm, GradSyncOptions options)
    : params_(std::move(params)), comm_(comm), options_(options) {
  std::vector<ParamInfo> infos;
  infos.reserve(params_.size());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& p = params_[i];
    if (!p.requires_grad() || !p.is_leaf()) {
      throw Error("prepare DDP", "parameter " + std::to_string(i),
                  "must be a leaf tensor that requires grad");
    }
    infos.push_back({static_cast<std::int64_t>(p.nbytes()), DtypeDeviceKey(p)});
  }
  plan_ = PlanBuckets(infos, options_.first_bucket_bytes, options_.bucket_bytes);
  bucket_of_.resize(params_.size());
  ready_.assign(params_.size(), false);
  for (std::size_t b = 0; b < plan_.size(); ++b) {
    Bucket bucket;
    bucket.params = plan_[b];
    std::int64_t offset = 0;
    for (std::size_t p : plan_[b]) {
      bucket_of_[p] = b;
      bucket.offsets.push_back(offset);
      offset += params_[p].numel();
    }
    bucket.flat = at::zeros({offset}, params_[plan_[b].front()].options().requires_grad(false));
    buckets_.push_back(std::move(bucket));
  }
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto accumulator = torch::autograd::impl::grad_accumulator(params_[i]);
    if (!accumulator)
      throw Error("prepare DDP", "parameter " + std::to_string(i), "no grad accumulator");
    hook_keys_.push_back(
        accumulator->add_post_hook(std::make_unique<ReadyHook>([this, i] { MarkReady(i); })));
    accumulators_.push_back(std::move(accumulator));
  }
  comm_thread_ = std::thread([this] { CommLoop(); });
}

GradSync::~GradSync() {
  for (std::size_t i = 0; i < accumulators_.size(); ++i) {
    accumulators_[i]->del_post_hook(hook_keys_[i]);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  comm_thread_.join();
}

void GradSync::BeginBackward(bool sync) {
  std::lock_guard<std::mutex> lock(mu_);
  active_ = sync;
  next_launch_ = 0;
  error_ = nullptr;
  ready_.assign(params_.size(), false);
  for (Bucket& bucket : buckets_) {
    bucket.pending = static_cast<int>(bucket.params.size());
    bucket.done = false;
  }
}

void GradSync::MarkReady(std::size_t param) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!active_ || ready_[param]) return;
  ready_[param] = true;
  Bucket& bucket = buckets_[bucket_of_[param]];
  if (--bucket.pending == 0 && options_.overlap) LaunchReadyLocked(/*wake_comm_thread=*/true);
}

void GradSync::FillBucketLocked(Bucket& bucket) {
  for (std::size_t k = 0; k < bucket.params.size(); ++k) {
    const at::Tensor& p = params_[bucket.params[k]];
    at::Tensor slot = bucket.flat.narrow(0, bucket.offsets[k], p.numel()).view(p.sizes());
    const at::Tensor& grad = p.grad();
    if (grad.defined()) {
      slot.copy_(grad);
    } else {
      slot.zero_();  // unused this step on this rank: contributes zero
    }
  }
}

void GradSync::LaunchReadyLocked(bool wake_comm_thread) {
  bool overlappable = false;
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
    Bucket& bucket = buckets_[next_launch_];
    FillBucketLocked(bucket);
    queue_.push_back(next_launch_);
    ++next_launch_;
    // The final bucket is ready only when backward is (nearly) over: nothing is left to overlap
    // with, so it is not handed to the comm thread; EndBackward runs it (a small model's only
    // bucket then costs no thread hand-off at all).
    overlappable |= next_launch_ < buckets_.size();
  }
  if (overlappable && wake_comm_thread) cv_.notify_all();
}

void GradSync::RunNextLocked(std::unique_lock<std::mutex>& lock) {
  const std::size_t b = queue_.front();
  queue_.pop_front();
  busy_ = true;
  at::Tensor flat = buckets_[b].flat;
  const bool failed_before = error_ != nullptr;
  lock.unlock();
  std::exception_ptr error;
  if (!failed_before) {
    try {
      comm_.AllReduce(flat, ReduceOp::kAvg, options_.timeout);
    } catch (...) {
      error = std::current_exception();
    }
  }
  lock.lock();
  if (error && !error_) error_ = error;
  buckets_[b].done = true;
  busy_ = false;
  cv_.notify_all();
}

void GradSync::CommLoop() {
  ProgressFile::MarkOverlapThread();  // its collectives overlap backward: not the step's wait
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || (!queue_.empty() && !busy_); });
    if (stop_) return;
    RunNextLocked(lock);
  }
}

void GradSync::EndBackward() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!active_) return;
  active_ = false;
  // From here the training thread waits for communication (the progress file's collective time).
  struct WaitSpan {
    explicit WaitSpan(ProgressFile* p) : progress(p) {
      if (progress != nullptr) progress->WaitStarted();
    }
    ~WaitSpan() {
      if (progress != nullptr) progress->WaitDone();
    }
    ProgressFile* progress;
  } wait_span(options_.progress);
  for (Bucket& bucket : buckets_) bucket.pending = 0;  // the rest: unused params count as zero
  // What is left is run here, on the training thread, when the communication thread is idle:
  // backward is over, so there is nothing left to overlap with, and this saves two thread
  // hand-offs per step (most of a small model's communication cost on busy cores).
  LaunchReadyLocked(/*wake_comm_thread=*/false);
  auto all_done = [&] {
    for (const Bucket& bucket : buckets_) {
      if (!bucket.done) return false;
    }
    return true;
  };
  while (!all_done()) {
    if (!busy_ && !queue_.empty()) {
      RunNextLocked(lock);
      continue;
    }
    // Each collective carries its own deadline; this wait only guards against a backend that
    // ignores it.
    const auto deadline =
        std::chrono::steady_clock::now() + options_.timeout + std::chrono::seconds(5);
    if (!cv_.wait_until(lock, deadline,
                        [&] { return all_done() || (!busy_ && !queue_.empty()); })) {
      lock.unlock();
      comm_.Abort();
      throw Error("all-reduce gradients", "",
                  "deadline of " + std::to_string(options_.timeout.count()) + " ms exceeded");
    }
  }
  if (error_) {
    std::exception_ptr error = error_;
    error_ = nullptr;
    lock.unlock();
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      throw Error("all-reduce gradients", "", e.what());
    }
  }
  for (Bucket& bucket : buckets_) {
    for (std::size_t k = 0; k < bucket.params.size(); ++k) {
      at::Tensor& p = params_[bucket.params[k]];
      at::Tensor slot = bucket.flat.narrow(0, bucket.offsets[k], p.numel()).view(p.sizes());
      if (p.grad().defined()) {
        p.mutable_grad().copy_(slot);
      } else {
        p.mutable_grad() = slot.clone();
      }
    }
  }
}

}  // namespace accel::worker
