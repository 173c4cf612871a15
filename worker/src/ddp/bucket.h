// Bucket: one flat tensor holding the gradients of a run of parameters (one dtype, one device),
// in bucket-plan order. Once bound, a parameter's .grad *is* its view into the bucket, so
// autograd accumulates straight into the buffer that is all-reduced: no copy in, no copy out,
// and zeroing is one fill. The final bucket also carries the used-bitmap (one element per
// parameter of the GradSync) after its gradients, so agreeing on unused parameters costs no
// extra collective.
//
// Not thread-safe: GradSync guards every Bucket with its mutex.
#ifndef ACCEL_WORKER_DDP_BUCKET_H_
#define ACCEL_WORKER_DDP_BUCKET_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Event.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace accel::worker {

struct Bucket {
  enum class State { kWaiting, kFilled, kRunning, kDone };

  std::vector<std::size_t> params;  // indices into GradSync's parameters
  std::vector<at::Tensor> views;    // views[k]: params[k]'s slot (AliasSlot), shaped like it
  at::Tensor storage;               // the gradients, then (final bucket) the used-bitmap
  at::Tensor grads;                 // storage's gradient part
  at::Tensor bitmap;                // storage's used-bitmap part (undefined unless final)

  // One backward pass.
  int pending = 0;  // parameters not yet ready
  State state = State::kWaiting;
  // CUDA: recorded on the stream that produced the gradients when the bucket was filled; the
  // thread that runs the collective makes its own stream wait for it.
  std::unique_ptr<c10::Event> ready_event;
  std::chrono::steady_clock::time_point ready_at, start_at, end_at;
  bool on_comm_thread = false;
};

// Returns the bucket of `indices` (into `params`, all of one dtype and device), its storage
// zero-filled, with `bitmap_elements` extra elements for the used-bitmap (0: none).
Bucket MakeBucket(const std::vector<at::Tensor>& params, std::vector<std::size_t> indices,
                  std::int64_t bitmap_elements);

// A tensor of `sizes` (contiguous) over `storage`'s elements from `offset` on: it shares the
// memory but is not an autograd view of `storage`, so detach_() on it (LibTorch 1.13's
// Optimizer::zero_grad) works.
at::Tensor AliasSlot(const at::Tensor& storage, std::int64_t offset, at::IntArrayRef sizes);

// True when `param`'s .grad is exactly `view` (same data, same shape).
bool IsBound(const at::Tensor& param, const at::Tensor& view);

// Makes `param`'s gradient the view: a gradient held elsewhere (the first backward, or after
// zero_grad(set_to_none)) is copied in once. Without a gradient the slot is zero-filled and the
// parameter stays without one, unless `adopt_slot`: then it gets the view as it is (the slot
// holds a reduced gradient).
void BindGrad(at::Tensor& param, const at::Tensor& view, bool adopt_slot);

// Records bucket.ready_event on the current stream of the calling thread (CUDA buckets only).
void RecordReady(Bucket& bucket);
// Makes the calling thread's current stream wait for bucket.ready_event (CUDA buckets only).
void WaitReady(const Bucket& bucket);

}  // namespace accel::worker

#endif  // ACCEL_WORKER_DDP_BUCKET_H_
