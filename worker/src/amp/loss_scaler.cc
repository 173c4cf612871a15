#include "worker/src/amp/loss_scaler.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace accel::worker {

LossScaler::LossScaler(LossScalerOptions options, c10::Device device)
    : options_(options), device_(device) {
  scale_ = at::full({1}, options_.init_scale, at::TensorOptions().dtype(at::kFloat).device(device));
  growth_tracker_ = at::zeros({1}, at::TensorOptions().dtype(at::kInt).device(device));
}

double LossScaler::scale() const { return scale_.item<float>(); }

std::int64_t LossScaler::growth_tracker() const { return growth_tracker_.item<int32_t>(); }

at::Tensor LossScaler::UnscaleAndCheck(const std::vector<at::Tensor>& grads) const {
  at::Tensor found_inf = at::zeros({1}, scale_.options());
  // GradScaler computes inv_scale in float64 and stores it as float32.
  at::Tensor inv_scale = scale_.to(at::kDouble).reciprocal().to(at::kFloat);
  std::vector<at::Tensor> defined;
  for (const at::Tensor& g : grads) {
    if (g.defined()) defined.push_back(g);
  }
  if (defined.empty()) return found_inf;
  if (device_.is_cuda()) {
    at::_amp_foreach_non_finite_check_and_unscale_(defined, found_inf, inv_scale);
    return found_inf;
  }
  // CPU: ordinary ops. The check looks at the scaled values, like the fused kernel.
  bool any_non_finite = false;
  const float inv = inv_scale.item<float>();
  for (at::Tensor& g : defined) {
    if (!any_non_finite && !at::isfinite(g).all().item<bool>()) any_non_finite = true;
    g.mul_(inv);
  }
  if (any_non_finite) found_inf.fill_(1.0);
  return found_inf;
}

void LossScaler::Update(const at::Tensor& found_inf) {
  if (device_.is_cuda()) {
    at::_amp_update_scale_(scale_, growth_tracker_, found_inf.to(scale_.device()),
                           options_.growth_factor, options_.backoff_factor,
                           options_.growth_interval);
    return;
  }
  // The same float32 arithmetic as the CUDA kernel (_amp_update_scale_cuda_kernel).
  float scale = scale_.item<float>();
  int32_t tracker = growth_tracker_.item<int32_t>();
  if (found_inf.item<float>() != 0.0f) {
    scale = static_cast<float>(scale * options_.backoff_factor);
    tracker = 0;
  } else {
    const int32_t successful = tracker + 1;
    if (successful == options_.growth_interval) {
      const float grown = static_cast<float>(scale * options_.growth_factor);
      if (std::isfinite(grown)) scale = grown;
      tracker = 0;
    } else {
      tracker = successful;
    }
  }
  scale_.fill_(scale);
  growth_tracker_.fill_(tracker);
}

void LossScaler::Restore(double scale, std::int64_t growth_tracker) {
  scale_.fill_(scale);
  growth_tracker_.fill_(growth_tracker);
}

}  // namespace accel::worker
