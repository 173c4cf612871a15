// The LibTorch version differences libaccel cares about, in one place.
//
// Autocast: LibTorch < 2.4 has per-device functions (set_enabled / set_cpu_enabled,
// set_autocast_gpu_dtype / set_autocast_cpu_dtype); 2.4 replaced them with
// set_autocast_enabled(DeviceType, bool) and set_autocast_dtype(DeviceType, ScalarType).
#ifndef ACCEL_WORKER_AMP_AUTOCAST_COMPAT_H_
#define ACCEL_WORKER_AMP_AUTOCAST_COMPAT_H_

#include <ATen/autocast_mode.h>
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>
#include <torch/version.h>

#define ACCEL_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||        \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace accel::worker::compat {

inline bool AutocastEnabled(c10::DeviceType device) {
#if ACCEL_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::is_enabled()
                                         : at::autocast::is_cpu_enabled();
#endif
}

inline void SetAutocastEnabled(c10::DeviceType device, bool enabled) {
#if ACCEL_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

inline c10::ScalarType AutocastDtype(c10::DeviceType device) {
#if ACCEL_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                         : at::autocast::get_autocast_cpu_dtype();
#endif
}

inline void SetAutocastDtype(c10::DeviceType device, c10::ScalarType dtype) {
#if ACCEL_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
#endif
}

// Clears one parameter's gradient as Optimizer::zero_grad() does: undefined in LibTorch 2.x
// (set_to_none), zero-filled in 1.13.
inline void ZeroGradLikeOptimizer(at::Tensor& param) {
  at::Tensor& grad = param.mutable_grad();
  if (!grad.defined()) return;
#if ACCEL_TORCH_AT_LEAST(2, 0)
  grad.reset();
#else
  grad.detach_();
  grad.zero_();
#endif
}

}  // namespace accel::worker::compat

#endif  // ACCEL_WORKER_AMP_AUTOCAST_COMPAT_H_
