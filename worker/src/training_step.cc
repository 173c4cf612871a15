// Accelerator's training step: backward (loss division, scaling, DDP), clip_grad_norm, step
// (loss scaling with GradScaler's per-optimizer rules, accelerate's skip rules) and zeroing.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/optimizer.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "accel/accelerator.h"
#include "accel/error.h"
#include "worker/src/accelerator_state.h"
#include "worker/src/amp/autocast_compat.h"
#include "worker/src/elastic/join.h"

namespace accel {
namespace {

// Prints the last sync pass's per-bucket timings (ACCELERATE_DEBUG_MODE, rank 0).
void PrintBucketTimings(const internal::AcceleratorState& s) {
  if (s.steps % 100 != 0) return;  // the first sync step, then every 100th
  for (const auto& t : s.grad_sync->last_timings()) {
    std::fprintf(stderr,
                 "[accel] step %lld bucket %lld elements: ready %.0f us, start %.0f us, "
                 "done %.0f us (%s thread)\n",
                 static_cast<long long>(s.steps), static_cast<long long>(t.elements), t.ready_us,
                 t.start_us, t.end_us, t.on_comm_thread ? "comm" : "training");
  }
}

std::vector<at::Tensor> OptimizerParams(torch::optim::Optimizer& optimizer) {
  std::vector<at::Tensor> params;
  for (auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) params.push_back(p);
  }
  return params;
}

}  // namespace

void Accelerator::backward(const at::Tensor& loss) {
  auto& s = *state_;
  // Checked before anything is issued: the same mistake on every rank leaves the group intact.
  if (!loss.defined() || !loss.requires_grad() || loss.numel() != 1) {
    throw Error("backward", "loss",
                !loss.defined()         ? std::string("is undefined")
                : !loss.requires_grad() ? std::string("does not require grad (computed under "
                                                      "no_grad, or from frozen parameters only)")
                                        : "has " + std::to_string(loss.numel()) +
                                              " elements; pass a scalar (e.g. loss.mean())");
  }
  // A backward after a step starts the next iteration; gradients it adds are scaled again, so
  // what an unscale without a step (clip_grad_norm alone) recorded is forgotten too.
  s.FinishScalerIteration();
  s.unscaled.clear();
  s.unscale_found.clear();
  // Gradients are summed over ranks: the average's 1/world rides on the loss, with 1/N.
  const std::int64_t divisor = static_cast<std::int64_t>(s.options.gradient_accumulation_steps) *
                               (s.grad_sync ? s.world : 1);
  at::Tensor scaled = loss;
  if (divisor > 1) scaled = scaled / static_cast<double>(divisor);
  if (s.scaler) scaled = scaled * s.scaler->scale_tensor();
  if (s.grad_sync) s.grad_sync->BeginBackward(s.sync, scaled);
  try {
    scaled.backward();
  } catch (const std::exception& e) {
    const bool aborted = s.grad_sync && s.grad_sync->CancelBackward();
    std::string cause = e.what();
    if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
      cause = c10_error->what_without_backtrace();
    }
    if (aborted) {
      cause +=
          " (gradient all-reduces of this backward had started, so the ranks may be a "
          "collective apart: the communicator was aborted; restart from a checkpoint)";
    }
    if (dynamic_cast<const Error*>(&e) != nullptr && !aborted) throw;
    throw Error("backward", "", cause);
  }
  s.unsynced = !s.sync;
  if (!s.grad_sync) return;
  s.grad_sync->EndBackward();
  if (s.options.debug && s.sync && s.rank == 0) PrintBucketTimings(s);
}

at::Tensor Accelerator::UnscaleOnce(const std::vector<at::Tensor>& params) {
  auto& s = *state_;
  const std::size_t group = s.unscale_found.size();
  std::vector<at::Tensor> grads;
  std::vector<bool> touched(group, false);
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    auto [it, inserted] = s.unscaled.emplace(p.unsafeGetTensorImpl(), group);
    if (inserted) {
      grads.push_back(p.grad());
    } else {
      touched[it->second] = true;
    }
  }
  at::Tensor found = at::zeros({1}, s.scaler->scale_tensor().options());
  if (!grads.empty()) {
    s.unscale_found.push_back(s.scaler->UnscaleAndCheck(grads));
    found = s.unscale_found.back();
  }
  for (std::size_t g = 0; g < group; ++g) {
    if (touched[g]) found = at::maximum(found, s.unscale_found[g]);
  }
  return found;
}

double Accelerator::clip_grad_norm(double max_norm) {
  auto& s = *state_;
  if (!s.sync || s.unsynced) return 0.0;
  const std::vector<at::Tensor> params = internal::PreparedParameters(s);
  if (s.scaler) {
    // As accelerate's unscale_gradients: each optimizer's own (its found_inf decides its step),
    // then the parameters of no optimizer, so that the norm is of true gradients.
    for (auto* optimizer : s.optimizers) UnscaleOnce(OptimizerParams(*optimizer));
    UnscaleOnce(params);
  }
  return torch::nn::utils::clip_grad_norm_(params, max_norm);
}

void Accelerator::ZeroGrads(torch::optim::Optimizer& optimizer) {
  auto& s = *state_;
  if (!s.grad_sync) {
    optimizer.zero_grad();
    return;
  }
  worker::GradSync::ParamSet bucketed;
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      if (s.grad_sync->Manages(p)) {
        bucketed.insert(p.unsafeGetTensorImpl());
      } else {
        worker::compat::ZeroGradLikeOptimizer(p);
      }
    }
  }
  s.grad_sync->ZeroGrad(&bucketed);
}

bool Accelerator::step(torch::optim::Optimizer& optimizer) {
  auto& s = *state_;
  // accelerate's rule: no step on a micro-step that does not sync, nor after one whose guard is
  // gone (its gradients are this rank's own, not yet reduced).
  if (!s.sync || s.unsynced) return false;
  prepare(optimizer);
  internal::FinishJoin(s);  // a joined process has applied the job's whole state by now
  bool stepped = true;
  if (s.scaler) {
    // GradScaler.step: this optimizer's gradients unscaled once per iteration, its own
    // found_inf (agreed by all ranks) decides; the scale is updated once per iteration.
    at::Tensor flag = UnscaleOnce(OptimizerParams(optimizer)).clone();
    if (s.world > 1) s.comm->AllReduce(flag, ReduceOp::kMax, s.options.collective_timeout);
    if (flag.item<float>() != 0.0f) {
      stepped = false;
      ++s.skipped;
    } else {
      optimizer.step();
    }
    s.iteration_found = s.iteration_found.defined() ? at::maximum(s.iteration_found, flag) : flag;
    s.scale_update_pending = true;
  } else {
    optimizer.step();
  }
  ZeroGrads(optimizer);
  internal::CompleteStep(s);
  return stepped;
}

namespace internal {

void CompleteStep(AcceleratorState& s) {
  ++s.steps;
  // The step is complete: its samples are done, and recover() comes back to this RNG state.
  s.pass_done += s.window_samples;
  s.window_samples = 0;
  if (!s.options.generation_file.empty()) {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    s.rng_at_step = gen.get_state();
  }
  if (s.progress) s.progress->Write(static_cast<std::uint64_t>(s.steps));
}

}  // namespace internal

}  // namespace accel
