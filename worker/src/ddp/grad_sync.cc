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
#include "worker/src/ddp/graph_walk.h"

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

std::string Ms(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

}  // namespace

GradSync::GradSync(std::vector<at::Tensor> params, Communicator& comm, GradSyncOptions options)
    : params_(std::move(params)), comm_(comm), options_(options) {
  std::vector<ParamInfo> infos;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& p = params_[i];
    if (!p.requires_grad() || !p.is_leaf() || p.is_sparse()) {
      throw Error("prepare DDP", "parameter " + std::to_string(i),
                  "must be a dense leaf tensor that requires grad");
    }
    infos.push_back({static_cast<std::int64_t>(p.nbytes()), DtypeDeviceKey(p)});
    if (!param_set_.insert(p.unsafeGetTensorImpl()).second) {
      throw Error("prepare DDP", "parameter " + std::to_string(i),
                  "is listed twice (tied parameters are synchronised once: deduplicate them)");
    }
    used_.push_back(p.grad().defined());
    carried_.push_back(p.grad().defined());
  }
  if (params_.empty()) throw Error("prepare DDP", "", "no parameter requires grad");
  plan_ = PlanBuckets(infos, options_.first_bucket_bytes, options_.bucket_bytes);
  bucket_of_.resize(params_.size());
  slot_of_.resize(params_.size());
  const auto final_dtype = params_[plan_.back().front()].scalar_type();
  // Counts of ranks are exact in float32/float64; a half-precision final bucket gets a separate
  // float32 bitmap (one more small collective).
  const bool bitmap_inside = final_dtype == at::kFloat || final_dtype == at::kDouble;
  for (std::size_t b = 0; b < plan_.size(); ++b) {
    const bool final = b + 1 == plan_.size();
    const auto extra = final && bitmap_inside ? static_cast<std::int64_t>(params_.size()) : 0;
    buckets_.push_back(MakeBucket(params_, plan_[b], extra));
    for (std::size_t k = 0; k < plan_[b].size(); ++k) {
      bucket_of_[plan_[b][k]] = b;
      slot_of_[plan_[b][k]] = k;
    }
  }
  if (!bitmap_inside) {
    separate_bitmap_ = at::zeros({static_cast<std::int64_t>(params_.size())},
                                 params_[plan_.back().front()].options().dtype(at::kFloat));
    separate_bitmap_.set_requires_grad(false);
  }
  accumulators_.resize(params_.size());
  hook_keys_.resize(params_.size());
  RefreshHooks();
  ready_.assign(params_.size(), false);
  if (options_.overlap) comm_thread_ = std::thread([this] { CommLoop(); });
}

GradSync::~GradSync() {
  for (std::size_t i = 0; i < accumulators_.size(); ++i) {
    if (accumulators_[i]) accumulators_[i]->del_post_hook(hook_keys_[i]);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (comm_thread_.joinable()) comm_thread_.join();
}

void GradSync::RefreshHooks() {
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto accumulator = torch::autograd::impl::grad_accumulator(params_[i]);
    if (!accumulator) {
      throw Error("prepare DDP", "parameter " + std::to_string(i), "no grad accumulator");
    }
    if (accumulator == accumulators_[i]) continue;
    if (accumulators_[i]) accumulators_[i]->del_post_hook(hook_keys_[i]);
    hook_keys_[i] =
        accumulator->add_post_hook(std::make_unique<ReadyHook>([this, i] { MarkReady(i); }));
    accumulators_[i] = std::move(accumulator);
  }
}

bool GradSync::Manages(const at::Tensor& param) const {
  return param_set_.count(param.unsafeGetTensorImpl()) > 0;
}

bool GradSync::WaitCommIdleLocked(std::unique_lock<std::mutex>& lock, Clock::duration limit) {
  return cv_.wait_for(lock, limit, [&] { return CommIdleLocked(); });
}

void GradSync::BeginBackward(bool sync, const at::Tensor& root) {
  // A parameter whose data was replaced (set_, as module.load() does) has a new accumulator,
  // the one this backward's graph uses. Outside mu_: hooks lock it.
  RefreshHooks();
  std::unique_lock<std::mutex> lock(mu_);
  if (!WaitCommIdleLocked(lock, options_.timeout + options_.backend_grace)) {
    throw Error("all-reduce gradients", "",
                "the communication thread is still blocked in an earlier collective after " +
                    Ms(options_.timeout + options_.backend_grace));
  }
  ++generation_;
  if (!window_open_) OpenWindowLocked();
  armed_ = true;
  sync_ = sync;
  closing_ = false;
  error_ = nullptr;
  next_fill_ = 0;
  next_hand_ = 0;
  pass_start_ = Clock::now();
  if (!sync) return;
  ready_.assign(params_.size(), false);
  for (Bucket& bucket : buckets_) {
    bucket.pending = static_cast<int>(bucket.params.size());
    bucket.state = Bucket::State::kWaiting;
  }
  // Parameters this backward cannot reach get no gradient: ready now, so they hold nothing back.
  const auto reachable = ReachableNodes(root);
  for (std::size_t p = 0; p < params_.size(); ++p) {
    if (reachable.count(accumulators_[p].get()) == 0) {
      ready_[p] = true;
      --buckets_[bucket_of_[p]].pending;
    }
  }
  FillReadyLocked();
  HandOverLocked();
}

void GradSync::OpenWindowLocked() {
  at::NoGradGuard no_grad;
  const double inverse_world = 1.0 / static_cast<double>(comm_.size());
  for (std::size_t p = 0; p < params_.size(); ++p) {
    used_[p] = false;
    if (!carried_[p]) continue;
    carried_[p] = false;
    if (!params_[p].grad().defined()) continue;  // reset by hand (zero_grad(set_to_none))
    const at::Tensor& view = buckets_[bucket_of_[p]].views[slot_of_[p]];
    BindGrad(params_[p], view, /*adopt_slot=*/false);
    if (comm_.size() > 1) view.mul_(inverse_world);
    used_[p] = true;
  }
  window_open_ = true;
}

void GradSync::MarkReady(std::size_t param) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!armed_) {
    throw Error("backward", "parameter " + std::to_string(param) + " of a prepared module",
                "gradients computed outside acc.backward(loss) would not be all-reduced and the "
                "replicas would drift apart; call acc.backward(loss) instead of loss.backward()");
  }
  used_[param] = true;
  Bucket& bucket = buckets_[bucket_of_[param]];
  // The first backward (or one after zero_grad(set_to_none)) left the gradient elsewhere.
  if (sync_ && bucket_of_[param] < next_hand_) {
    // Its bucket went to the communication thread (the parameter looked unreachable from the
    // loss): this gradient would be missing from the sum on this rank only.
    throw Error("backward", "parameter " + std::to_string(param) + " of a prepared module",
                "got its gradient from a backward re-entered from inside backward (as re-entrant "
                "activation checkpointing does) after its DDP bucket was sent; set "
                "ACCEL_OVERLAP=off (buckets then wait for the end of backward) or compute it in "
                "the outer graph");
  }
  BindGrad(params_[param], bucket.views[slot_of_[param]], /*adopt_slot=*/false);
  if (!sync_ || ready_[param]) return;
  ready_[param] = true;
  if (--bucket.pending == 0) {
    FillReadyLocked();
    HandOverLocked();
  }
}

void GradSync::FillReadyLocked() {
  while (next_fill_ < buckets_.size() && buckets_[next_fill_].pending == 0) {
    Bucket& bucket = buckets_[next_fill_];
    for (std::size_t k = 0; k < bucket.params.size(); ++k) {
      const std::size_t p = bucket.params[k];
      // Used parameters were bound by their hook; a bound unused one already holds what earlier
      // micro-steps accumulated; anything else contributes zeros.
      if (!IsBound(params_[p], bucket.views[k])) BindGrad(params_[p], bucket.views[k], false);
    }
    RecordReady(bucket);
    bucket.ready_at = Clock::now();
    bucket.state = Bucket::State::kFilled;
    ++next_fill_;
  }
}

void GradSync::HandOverLocked() {
  if (!options_.overlap || !armed_ || !sync_ || closing_ || error_) return;
  const std::size_t final_bucket = buckets_.size() - 1;
  bool handed = false;
  while (next_hand_ < next_fill_ && next_hand_ < final_bucket &&
         comm_queue_.size() + (comm_running_ ? 1 : 0) < kMaxInFlight) {
    comm_queue_.push_back(next_hand_++);
    handed = true;
  }
  if (handed) cv_.notify_all();
}

void GradSync::RunLocked(std::unique_lock<std::mutex>& lock, std::size_t b, bool on_comm_thread) {
  Bucket& bucket = buckets_[b];
  const std::uint64_t generation = generation_;
  if (error_) {
    bucket.state = Bucket::State::kDone;
    return;
  }
  bucket.state = Bucket::State::kRunning;
  bucket.on_comm_thread = on_comm_thread;
  bucket.start_at = Clock::now();
  at::Tensor storage = bucket.storage;
  lock.unlock();
  std::exception_ptr error;
  try {
    WaitReady(bucket);
    comm_.AllReduce(storage, ReduceOp::kSum, options_.timeout);
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  if (generation != generation_) return;  // the pass was abandoned meanwhile
  if (error && !error_) error_ = error;
  bucket.end_at = Clock::now();
  bucket.state = Bucket::State::kDone;
}

void GradSync::CommLoop() {
  ProgressFile::MarkOverlapThread();  // its collectives overlap backward: not the step's wait
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !comm_queue_.empty(); });
    if (stop_) return;
    const std::size_t b = comm_queue_.front();
    comm_queue_.pop_front();
    comm_running_ = true;
    RunLocked(lock, b, /*on_comm_thread=*/true);
    comm_running_ = false;
    HandOverLocked();
    cv_.notify_all();
  }
}

void GradSync::AbandonLocked() {
  ++generation_;
  comm_queue_.clear();
  armed_ = false;
  closing_ = false;
}

bool GradSync::CancelBackward() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!armed_) return false;
  closing_ = true;  // nothing more is handed over
  const bool issued = sync_ && next_hand_ > 0;
  const bool idle = WaitCommIdleLocked(lock, options_.timeout + options_.backend_grace);
  AbandonLocked();
  lock.unlock();
  if (issued || !idle) comm_.Abort();
  return issued || !idle;
}

void GradSync::OrderCollective() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!armed_ || !sync_ || !options_.overlap || closing_) return;
  // The communication thread runs what it holds and hands itself the rest of what was launched
  // (HandOverLocked after each bucket; the final bucket always waits for EndBackward), so once it
  // is idle every launched bucket was issued. An error stops it early; EndBackward reports it.
  const auto limit = options_.timeout * static_cast<int>(kMaxInFlight) + options_.backend_grace;
  if (!WaitCommIdleLocked(lock, limit)) {
    throw Error("collective inside backward", "",
                "the communication thread did not finish the gradient buckets launched before "
                "it within " +
                    Ms(std::chrono::duration_cast<std::chrono::milliseconds>(limit)));
  }
}

}  // namespace accel::worker
