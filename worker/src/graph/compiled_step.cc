// accel::CompiledStep (accel/compiled_step.h): the eager step, or per input shape one eager run of
// the step body on a side stream, then its CUDA graph captured and replayed.
#include "accel/compiled_step.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "accel/accelerator.h"
#include "worker/src/accelerator_state.h"
#include "worker/src/graph/masked_optimizer.h"
#include "worker/src/graph/step_graph.h"

namespace accel {
namespace internal {

// Eager steps before the step body may replace them: LibTorch creates optimizer state at the
// first step that is not skipped (an fp16 job skips its first few while the scale falls), so
// up to kMaxWarmup steps wait for it.
constexpr int kMinWarmup = 2;
constexpr int kMaxWarmup = 64;

struct ShapeGraph {
  std::vector<std::int64_t> data_sizes, target_sizes;
  at::Tensor data, target, loss;  // the graph's inputs and output
  worker::StepGraph graph;
  int runs = 0;  // 1: run eagerly on the side stream; 2: captured
};

struct CompiledStepImpl {
  Accelerator* acc;
  AcceleratorState* s;
  torch::optim::Optimizer* optimizer;
  CompiledStep::Forward forward;
  double max_grad_norm;

  std::string reason;               // why every step is eager; "" while a graph is possible
  bool body_without_graph = false;  // RunBodyEagerlyForTesting
  bool told = false;
  bool graphed = false;
  int eager_steps = 0;
  std::int64_t version = -1;
  std::unique_ptr<worker::MaskedOptimizer> masked;
  std::vector<std::unique_ptr<ShapeGraph>> shapes;
  ShapeGraph spill;    // the shapes past kMaxShapes: never captured
  at::Tensor skipped;  // float32 [1]: steps the graphs skipped since the last sync
  at::Tensor no_inf;   // float32 [1] zeros: found_inf without loss scaling
  std::shared_ptr<std::function<void()>> sync;

  void Tell(const std::string& line) {
    if (s->rank == 0) std::cerr << "[accel] compile_step: " << line << "\n";
  }

  void GiveUp(std::string why) {
    reason = std::move(why);
    Tell("every step runs eagerly: " + reason);
  }

  // What rules a graph out for the whole run, or "".
  std::string StaticReason() const {
    if (!s->device.is_cuda()) return "the device is " + s->device.str() + ", not CUDA";
    if (!worker::StepGraph::Available()) return "this LibTorch has no CUDA graphs";
    if (s->world > 1) {
      return "a world of " + std::to_string(s->world) +
             " (DDP's bucket all-reduces are not captured yet)";
    }
    if (s->options.gradient_accumulation_steps > 1)
      return "gradient accumulation over 1 micro-step";
    if (!s->options.generation_file.empty()) return "an elastic job (in-place recovery)";
    if (max_grad_norm > 0) return "gradient clipping (clip_grad_norm is not captured)";
    if (!dynamic_cast<torch::optim::SGD*>(optimizer) &&
        !dynamic_cast<torch::optim::AdamW*>(optimizer)) {
      return "the optimizer is not torch::optim::SGD or AdamW";
    }
    return "";
  }

  at::Tensor Eager(const at::Tensor& data, const at::Tensor& target) {
    at::Tensor loss = acc->autocast([&] { return forward(data, target); });
    acc->backward(loss);
    if (max_grad_norm > 0) acc->clip_grad_norm(max_grad_norm);
    acc->step(*optimizer);
    return loss.detach();
  }

  // The step on the graph's inputs: forward, scaled backward, unscale and overflow check,
  // the masked optimizer step, the scale update, zeroed gradients. Kernels only.
  void Body(ShapeGraph& g) {
    at::Tensor loss = acc->autocast([&] { return forward(g.data, g.target); });
    at::Tensor scaled = s->scaler ? loss * s->scaler->scale_tensor() : loss;
    scaled.backward();
    std::vector<at::Tensor> grads;
    for (const auto& p : masked->params()) grads.push_back(p.grad());
    const at::Tensor found = s->scaler ? s->scaler->UnscaleAndCheck(grads) : no_inf;
    masked->Step(found);
    if (s->scaler) {
      s->scaler->Update(found);
      skipped.add_(found);
    }
    for (const auto& p : masked->params()) p.grad().zero_();
    g.loss = loss.detach();
  }

  ShapeGraph* ShapeFor(const at::Tensor& data, const at::Tensor& target) {
    for (auto& g : shapes) {
      if (data.sizes() == c10::IntArrayRef(g->data_sizes) &&
          target.sizes() == c10::IntArrayRef(g->target_sizes)) {  // no copy: every step looks
        return g.get();
      }
    }
    if (static_cast<int>(shapes.size()) == CompiledStep::kMaxShapes) return nullptr;
    auto g = std::make_unique<ShapeGraph>();
    g->data_sizes = data.sizes().vec();
    g->target_sizes = target.sizes().vec();
    g->data = at::empty_like(data, at::MemoryFormat::Contiguous);
    g->target = at::empty_like(target, at::MemoryFormat::Contiguous);
    shapes.push_back(std::move(g));
    return shapes.back().get();
  }

  // Drops graphs and the masked optimizer (new tensors after load_state, recover, prepare).
  // Whoever bumped the version synced the counters first (SyncDeviceCounters).
  void Reset() {
    shapes.clear();
    masked.reset();
    eager_steps = 0;
    version = s->state_version;
  }

  void SyncCounters() {
    if (masked) masked->SyncToOptimizer();
    if (skipped.defined()) {
      s->skipped += static_cast<std::int64_t>(skipped.item<float>());
      skipped.zero_();
    }
  }

  // The first graph-mode step: the pending scale update done, every gradient defined (the
  // graph accumulates into them in place).
  bool StartGraphMode() {
    std::string why;
    masked = worker::MaskedOptimizer::Make(*optimizer, &why);
    if (!masked) {
      if (eager_steps >= kMaxWarmup)
        GiveUp(why + " after " + std::to_string(eager_steps) + " steps");
      return false;
    }
    s->FinishScalerIteration();
    for (auto p : masked->params()) {
      if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
    }
    const auto options = at::TensorOptions().dtype(at::kFloat).device(s->device);
    if (!skipped.defined()) skipped = at::zeros({1}, options);
    no_inf = at::zeros({1}, options);
    return true;
  }

  at::Tensor Call(const at::Tensor& data, const at::Tensor& target) {
    if (!reason.empty()) return Eager(data, target);
    if (!told) {
      told = true;
      if (std::string why = body_without_graph ? "" : StaticReason(); !why.empty()) {
        GiveUp(why);
        return Eager(data, target);
      }
    }
    if (version != s->state_version) Reset();
    if (!s->sync || s->unsynced) return Eager(data, target);
    if (!masked) {
      if (eager_steps < kMinWarmup || !StartGraphMode()) {
        ++eager_steps;
        return Eager(data, target);
      }
    }
    ShapeGraph* g = ShapeFor(data, target);
    masked->RefreshHyperparameters();
    if (body_without_graph) {
      if (g == nullptr) g = &spill;
      g->data = data;
      g->target = target;
      Body(*g);
    } else if (g == nullptr) {  // more shapes than graphs: the body, eagerly, on a side stream
      spill.data = data;
      spill.target = target;
      spill.graph.Run([&] { Body(spill); });
    } else {
      g->data.copy_(data, /*non_blocking=*/true);
      g->target.copy_(target, /*non_blocking=*/true);
      if (g->runs == 0) {
        g->graph.Run([&] { Body(*g); });
        g->runs = 1;
      } else {
        if (g->runs == 1) {
          const bool cache = at::autocast::is_autocast_cache_enabled();
          at::autocast::set_autocast_cache_enabled(false);  // no cached casts across replays
          g->graph.Capture([&] { Body(*g); });
          at::autocast::set_autocast_cache_enabled(cache);
          g->runs = 2;
          Tell(c10::str("captured the step for input ", g->data.scalar_type(), " ",
                        g->data.sizes()) +
               " after " + std::to_string(eager_steps) + " eager steps; replaying it");
        }
        g->graph.Replay();
        graphed = true;
      }
    }
    CompleteStep(*s);
    return (g ? g->loss : spill.loss).clone();
  }
};

void RunBodyEagerlyForTesting(CompiledStep& step) { step.impl_->body_without_graph = true; }

}  // namespace internal

CompiledStep::CompiledStep(std::unique_ptr<internal::CompiledStepImpl> impl)
    : impl_(std::move(impl)) {}
CompiledStep::CompiledStep(CompiledStep&&) noexcept = default;
CompiledStep& CompiledStep::operator=(CompiledStep&&) noexcept = default;
CompiledStep::~CompiledStep() {
  if (impl_ && impl_->masked) impl_->SyncCounters();
}

at::Tensor CompiledStep::operator()(const at::Tensor& data, const at::Tensor& target) {
  return impl_->Call(data, target);
}
bool CompiledStep::graphed() const { return impl_->graphed; }
const std::string& CompiledStep::eager_reason() const { return impl_->reason; }

CompiledStep Accelerator::compile_step(torch::optim::Optimizer& optimizer,
                                       CompiledStep::Forward forward, double max_grad_norm) {
  prepare(optimizer);
  auto impl = std::make_unique<internal::CompiledStepImpl>();
  impl->acc = this;
  impl->s = state_.get();
  impl->optimizer = &optimizer;
  impl->forward = std::move(forward);
  impl->max_grad_norm = max_grad_norm;
  internal::CompiledStepImpl* raw = impl.get();
  impl->sync = std::make_shared<std::function<void()>>([raw] { raw->SyncCounters(); });
  state_->device_syncs.push_back(impl->sync);
  return CompiledStep(std::move(impl));
}

}  // namespace accel
