// accel::CompiledStep: a whole training step that the Accelerator may capture in a CUDA graph and
// replay: torch.compile(mode="reduce-overhead")'s idea, for forward, backward, loss scaling and the
// optimizer step together, with the program's consent (Accelerator::compile_step).
//
// clang-format off
//   auto train_step = acc.compile_step(model, opt, [&](const at::Tensor& x, const at::Tensor& y) {
//     return loss_fn(model->forward(x), y);
//   });
//   for (const auto& batch : loader) {
//     auto sync = acc.accumulate(model);
//     at::Tensor loss = train_step(batch.data, batch.target);  // read it only now and then
//   }
// clang-format on
//
// A call does what these do, in the same order, with the same results:
//   loss = acc.autocast([&] { return fn(x, y); }); acc.backward(loss); acc.step(opt);
// and returns loss.detach() (reading it, e.g. .item(), waits for the device: do it at a log
// interval). On a CUDA device where it can, the step is captured in a CUDA graph once the
// optimizer's state exists (after a few eager steps; one graph per input shape, up to
// kMaxShapes) and then replayed: one launch instead of one per kernel, no host synchronization
// (the fp16 overflow check, skip and scale update stay on the device; a skipped step leaves
// parameters and optimizer state unchanged, as GradScaler's skip does). Where it cannot, every
// call is the eager step and the main process prints one line saying why: a CPU device, a world
// over 1 (DDP buckets), gradient accumulation over 1, an elastic job (in-place recovery),
// gradient clipping, an optimizer other than torch::optim::SGD / AdamW (no amsgrad).
// load_state() and recover() drop the graphs; the next calls capture again.
// A learning rate may change between calls (a scheduler); the optimizer's other options (betas,
// eps, weight decay, momentum) are read when the step is captured and must not change after.
// fn must be the same computation every call (the graph replays what the capture recorded: no
// host-side branches on data, no .item()), and x, y must not be used after the next call.
#ifndef ACCEL_COMPILED_STEP_H_
#define ACCEL_COMPILED_STEP_H_

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <string>

namespace accel {

class Accelerator;

class CompiledStep;
namespace internal {
struct CompiledStepImpl;
// Tests only (tests/unit/worker/graph): every step through the graph's step body, run eagerly
// on whatever device (no capture), so that a CPU build checks what a graph replays.
void RunBodyEagerlyForTesting(CompiledStep& step);
}  // namespace internal

class CompiledStep {
 public:
  using Forward = std::function<at::Tensor(const at::Tensor& data, const at::Tensor& target)>;
  static constexpr int kMaxShapes = 4;  // input shapes with their own graph; others run eagerly

  CompiledStep(CompiledStep&&) noexcept;
  CompiledStep& operator=(CompiledStep&&) noexcept;
  ~CompiledStep();

  // One training step on (data, target); returns the loss (detached, on the device).
  at::Tensor operator()(const at::Tensor& data, const at::Tensor& target);

  // True once a step was replayed from a CUDA graph.
  bool graphed() const;
  // Why the steps run eagerly ("" while it may still capture, or once it has).
  const std::string& eager_reason() const;

 private:
  friend class Accelerator;
  friend void internal::RunBodyEagerlyForTesting(CompiledStep& step);
  explicit CompiledStep(std::unique_ptr<internal::CompiledStepImpl> impl);
  std::unique_ptr<internal::CompiledStepImpl> impl_;
};

}  // namespace accel

#endif  // ACCEL_COMPILED_STEP_H_
