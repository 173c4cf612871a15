// LossScaler: the dynamic loss scale of torch.cuda.amp.GradScaler, for fp16 training.
//
// State machine (GradScaler._update_scale / at::_amp_update_scale_): after each optimizer step
// with an overflow (any inf/NaN gradient) the scale is multiplied by backoff_factor and the clean
// step counter resets; after growth_interval consecutive clean steps the scale is multiplied by
// growth_factor (if that stays finite) and the counter resets. The scale is a float32 tensor of
// shape [1] on the training device, like GradScaler's.
//
// CUDA tensors use the fused at::_amp_foreach_non_finite_check_and_unscale_ and
// at::_amp_update_scale_; CPU tensors use ordinary ops with identical float32 arithmetic.
// Not thread-safe; owned by the Accelerator.
#ifndef ACCEL_WORKER_AMP_LOSS_SCALER_H_
#define ACCEL_WORKER_AMP_LOSS_SCALER_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

#include "accel/defaults.h"

namespace accel::worker {

struct LossScalerOptions {
  double init_scale = defaults::kInitScale;
  double growth_factor = defaults::kGrowthFactor;
  double backoff_factor = defaults::kBackoffFactor;
  int growth_interval = defaults::kGrowthInterval;
};

class LossScaler {
 public:
  LossScaler(LossScalerOptions options, c10::Device device);

  // The current scale, a float32 [1] tensor on the device (multiply the loss by it).
  const at::Tensor& scale_tensor() const { return scale_; }
  // The current scale on the host (synchronizes on CUDA).
  double scale() const;
  std::int64_t growth_tracker() const;

  // Multiplies every defined gradient by 1/scale in place and returns found_inf: a float32 [1]
  // tensor on the device, 1 when any gradient had an inf or NaN, else 0.
  at::Tensor UnscaleAndCheck(const std::vector<at::Tensor>& grads) const;

  // Advances the state machine with this step's (globally agreed) found_inf.
  void Update(const at::Tensor& found_inf);

  // Sets the state (checkpoint restore).
  void Restore(double scale, std::int64_t growth_tracker);

 private:
  LossScalerOptions options_;
  c10::Device device_;
  at::Tensor scale_;           // float32 [1]
  at::Tensor growth_tracker_;  // int32 [1]
};

}  // namespace accel::worker

#endif  // ACCEL_WORKER_AMP_LOSS_SCALER_H_
