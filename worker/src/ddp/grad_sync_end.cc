// GradSync after backward: EndBackward (the last buckets, unused parameters, the error of a
// failed bucket), the timings, and the gradients' reset (ZeroGrad, ResetGrads). The backward
// half (hooks, buckets, the communication thread) is grad_sync.cc.
#include <ATen/ATen.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "accel/error.h"
#include "worker/src/ddp/grad_sync.h"

namespace accel::worker {
namespace {

std::string MsText(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

}  // namespace

void GradSync::EndBackward() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!armed_) return;
  if (!sync_) {
    armed_ = false;
    return;
  }
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
  // Whatever got no gradient by now (no hook fired) counts as unused this pass.
  for (std::size_t p = 0; p < params_.size(); ++p) {
    if (!ready_[p]) {
      ready_[p] = true;
      --buckets_[bucket_of_[p]].pending;
    }
  }
  FillReadyLocked();
  closing_ = true;
  // The communication thread holds at most kMaxInFlight buckets, each with its own deadline.
  const auto limit = options_.timeout * static_cast<int>(kMaxInFlight) + options_.backend_grace;
  if (!WaitCommIdleLocked(lock, limit)) {
    AbandonLocked();
    lock.unlock();
    comm_.Abort();
    throw Error("all-reduce gradients", "",
                "the communication thread did not finish within " +
                    MsText(std::chrono::duration_cast<std::chrono::milliseconds>(limit)) +
                    "; communicator aborted");
  }
  // The rest, the final bucket always among them, runs here: backward is over, nothing is left
  // to overlap with, and a thread hand-off would only add latency.
  for (std::size_t b = next_hand_; b < buckets_.size() && !error_; ++b) {
    if (b + 1 == buckets_.size()) WriteBitmapLocked();
    RunLocked(lock, b, /*on_comm_thread=*/false);
  }
  if (!error_ && separate_bitmap_.defined()) {
    at::Tensor bitmap = separate_bitmap_;
    lock.unlock();
    std::exception_ptr error;
    try {
      comm_.AllReduce(bitmap, ReduceOp::kSum, options_.timeout);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error) error_ = error;
  }
  if (error_) {
    std::exception_ptr error = error_;
    AbandonLocked();
    lock.unlock();
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      throw Error("all-reduce gradients", "", e.what());
    }
  }
  SettleUnusedLocked();
  if (options_.timings) RecordTimingsLocked();
  armed_ = false;
  closing_ = false;
  window_open_ = false;
}

void GradSync::WriteBitmapLocked() {
  at::Tensor flags = at::empty({static_cast<std::int64_t>(params_.size())}, at::kFloat);
  float* out = flags.data_ptr<float>();
  for (std::size_t p = 0; p < params_.size(); ++p) out[p] = used_[p] ? 1.0f : 0.0f;
  at::Tensor target = separate_bitmap_.defined() ? separate_bitmap_ : buckets_.back().bitmap;
  target.copy_(flags);
}

void GradSync::SettleUnusedLocked() {
  const at::Tensor bitmap = separate_bitmap_.defined() ? separate_bitmap_ : buckets_.back().bitmap;
  const at::Tensor counts = bitmap.to(at::kCPU, at::kFloat).contiguous();
  const float* used_by = counts.data_ptr<float>();
  for (std::size_t p = 0; p < params_.size(); ++p) {
    const at::Tensor& view = buckets_[bucket_of_[p]].views[slot_of_[p]];
    if (used_by[p] < 0.5f) {
      // No rank used it in this window: what ZeroGrad left (zeros, or none on LibTorch 2.x).
      if (options_.zero_to_none && IsBound(params_[p], view)) params_[p].mutable_grad().reset();
    } else {
      BindGrad(params_[p], view, /*adopt_slot=*/true);  // locally unused: the reduced gradient
    }
    carried_[p] = used_by[p] >= 0.5f && IsBound(params_[p], view);
  }
}

void GradSync::RecordTimingsLocked() {
  auto us = [&](Clock::time_point t) {
    return std::chrono::duration<double, std::micro>(t - pass_start_).count();
  };
  timings_.clear();
  for (const Bucket& bucket : buckets_) {
    timings_.push_back({bucket.grads.numel(), us(bucket.ready_at), us(bucket.start_at),
                        us(bucket.end_at), bucket.on_comm_thread});
  }
}

std::vector<BucketTiming> GradSync::last_timings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return timings_;
}

void GradSync::ZeroGrad(const ParamSet* which) {
  std::lock_guard<std::mutex> lock(mu_);
  at::NoGradGuard no_grad;
  auto selected = [&](std::size_t p) {
    return which == nullptr || which->count(params_[p].unsafeGetTensorImpl()) > 0;
  };
  for (Bucket& bucket : buckets_) {
    bool all = true;
    for (std::size_t p : bucket.params) all = all && selected(p);
    if (all) bucket.grads.zero_();
    for (std::size_t k = 0; k < bucket.params.size(); ++k) {
      const std::size_t p = bucket.params[k];
      if (!selected(p)) continue;
      used_[p] = false;
      carried_[p] = false;
      if (IsBound(params_[p], bucket.views[k])) {
        if (!all) bucket.views[k].zero_();
      } else if (params_[p].grad().defined()) {
        params_[p].mutable_grad().reset();
      }
    }
  }
}

void GradSync::ResetGrads() {
  std::lock_guard<std::mutex> lock(mu_);
  for (std::size_t p = 0; p < params_.size(); ++p) {
    params_[p].mutable_grad().reset();
    used_[p] = false;
    carried_[p] = false;
  }
  window_open_ = false;
}

}  // namespace accel::worker
