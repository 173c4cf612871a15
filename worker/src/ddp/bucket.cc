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
    bucket.views.push_back(AliasSlot(bucket.storage, offset, params[p].sizes()));
    offset += params[p].numel();
  }
  return bucket;
}

at::Tensor AliasSlot(const at::Tensor& storage, std::int64_t offset, at::IntArrayRef sizes) {
  // set_() on a fresh tensor aliases the storage without recording a view relation: LibTorch's
  // Optimizer::zero_grad (detach_(), then zero_()) works on it, as on DDP's
  // gradient_as_bucket_view.
  at::NoGradGuard no_grad;
  std::vector<std::int64_t> strides(sizes.size(), 1);
  for (std::size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * sizes[d];
  at::Tensor alias = at::empty({0}, storage.options());
  alias.set_(storage.storage(), storage.storage_offset() + offset, sizes, strides);
  return alias;
}

bool IsBound(const at::Tensor& param, const at::Tensor& view) {
  const at::Tensor& grad = param.grad();
  return grad.defined() && !grad.is_sparse() && grad.data_ptr() == view.data_ptr() &&
         grad.sizes() == view.sizes() && grad.strides() == view.strides();
}

void BindGrad(at::Tensor& param, const at::Tensor& view, bool adopt_slot) {
  if (IsBound(param, view)) return;
  at::NoGradGuard no_grad;
  const at::Tensor& grad = param.grad();
  at::Tensor slot = view;
  if (grad.defined()) {
    // A sparse gradient (Embedding(sparse=true)) is densified into the slot: the bucket is dense.
    slot.copy_(grad.is_sparse() ? grad.to_dense() : grad);
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
