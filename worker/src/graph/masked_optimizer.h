// MaskedOptimizer: LibTorch's SGD and AdamW updates, applied only where the step's found_inf is 0,
// with no host synchronization, so that one CUDA graph holds the whole step, the overflow skip
// included (GradScaler skips optimizer.step() on the host; a graph cannot branch).
//
// The arithmetic is LibTorch's (torch/csrc/api/src/optim/sgd.cpp, adamw.cpp, 1.13 to 2.x), with
// what the host computed per step moved to the device: the learning rate and weight decay are
// float32 [1] tensors written before each step when the host's value changed (a scheduler), and
// AdamW's step count is a device counter, so its bias corrections are float32, not float64
// (the results agree to float32 rounding). A skipped step leaves parameters and state bitwise
// unchanged (torch.where picks the old tensors).
//
// The optimizer's own state tensors are used in place (exp_avg, momentum_buffer): a checkpoint
// saves them as always; SyncToOptimizer() writes the device step counts into the optimizer's
// state (a host synchronization) before anything reads them.
// Not thread-safe. Works on any device (tests run it on CPU against torch::optim).
#ifndef ACCEL_WORKER_GRAPH_MASKED_OPTIMIZER_H_
#define ACCEL_WORKER_GRAPH_MASKED_OPTIMIZER_H_

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace accel::worker {

class MaskedOptimizer {
 public:
  // For `optimizer` (torch::optim::SGD, or AdamW without amsgrad) over its parameters that
  // require a gradient and (AdamW, SGD with momentum) have state: one real step taken, since
  // LibTorch creates state at a parameter's first step, differently from the later ones. A
  // parameter without state stays out, as LibTorch skips one without a gradient. Returns null
  // and sets `why` when it cannot.
  static std::unique_ptr<MaskedOptimizer> Make(torch::optim::Optimizer& optimizer,
                                               std::string* why);
  virtual ~MaskedOptimizer() = default;

  // Writes the host's learning rate / weight decay into the device copies where they changed
  // (kernels, no synchronization). Call before each step, outside a capture.
  virtual void RefreshHyperparameters() = 0;
  // One step with `found_inf` (float32 [1], on the parameters' device): the update where it is 0,
  // nothing where it is not. Issues kernels only.
  virtual void Step(const at::Tensor& found_inf) = 0;
  // Makes the optimizer's own state complete (AdamW's per-parameter step counts). Synchronizes.
  virtual void SyncToOptimizer() = 0;
  // The parameters it steps.
  virtual const std::vector<at::Tensor>& params() const = 0;
};

}  // namespace accel::worker

#endif  // ACCEL_WORKER_GRAPH_MASKED_OPTIMIZER_H_
