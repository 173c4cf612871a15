#include "worker/src/ddp/bucket.h"

#include <ATen/ATen.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <memory>
#include <utility>
#include <vector>

namespace accel::worker {

Bucket MakeBucket(const std::vector<at::Tensor>& params, std::vector<std::size_t> indices,
                  std::int64_t bitmap_elements) {
  at::NoGradGuard no_grad;
  Bucket bucket;
  bucket.params = std::move(indices);
  std::int64_t numel = 0;
  for (std::size_t p : bucket.params) numel += params[p].numel();
  const at::Tensor& first = params[bucket.params.front()];
  bucket.storage = at::zeros({numel + bitmap_elements}, first.options().requires_grad(false));
  bucket.grads = bucket.storage.narrow(0, 0, numel);
  if (bitmap_elements > 0) bucket.bitmap = bucket.storage.narrow(0, numel, bitmap_elements);
  std::int64_t offset = 0;
  for (std::size_t p : bucket.params) {
    bucket.views.push_back(
        bucket.storage.narrow(0, offset, params[p].numel()).view(params[p].sizes()));
    offset += params[p].numel();
  }
  return bucket;
}

bool IsBound(const at::Tensor& param, const at::Tensor& view) {
  const at::Tensor& grad = param.grad();
  return grad.defined() && grad.data_ptr() == view.data_ptr() && grad.sizes() == view.sizes() &&
         grad.strides() == view.strides();
}

void BindGrad(at::Tensor& param, const at::Tensor& view, bool adopt_slot) {
  if (IsBound(param, view)) return;
  at::NoGradGuard no_grad;
  const at::Tensor& grad = param.grad();
  at::Tensor slot = view;
  if (grad.defined()) {
    slot.copy_(grad);
  } else if (!adopt_slot) {
    slot.zero_();
    return;
  }
  param.mutable_grad() = view;
}

void RecordReady(Bucket& bucket) {
  const c10::Device device = bucket.storage.device();
  if (!device.is_cuda()) return;
  if (!bucket.ready_event) bucket.ready_event = std::make_unique<c10::Event>(device.type());
  c10::impl::VirtualGuardImpl guard(device.type());
  bucket.ready_event->record(guard.getStream(device));
}

void WaitReady(const Bucket& bucket) {
  const c10::Device device = bucket.storage.device();
  if (!device.is_cuda() || !bucket.ready_event) return;
  c10::impl::VirtualGuardImpl guard(device.type());
  bucket.ready_event->block(guard.getStream(device));
}

}  // namespace accel::worker
