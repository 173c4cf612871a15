// OrderedCommunicator: the Communicator an Accelerator hands out and issues its own collectives
// on (reduce, gather, wait_for_everyone, found_inf, clip norm, checkpoints). Before each
// collective it runs `before`, which is GradSync::OrderCollective: a collective issued from inside
// backward (a SyncBatchNorm-style backward function) then follows every DDP bucket that was
// launched before it, on every rank, instead of racing the communication thread for the
// communicator. GradSync's own bucket all-reduces go to inner() directly.
#ifndef ACCEL_WORKER_DDP_ORDERED_COMMUNICATOR_H_
#define ACCEL_WORKER_DDP_ORDERED_COMMUNICATOR_H_

#include <ATen/core/Tensor.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "accel/communicator.h"

namespace accel::worker {

class OrderedCommunicator : public Communicator {
 public:
  OrderedCommunicator(std::unique_ptr<Communicator> inner, std::function<void()> before)
      : inner_(std::move(inner)), before_(std::move(before)) {}

  // The communicator underneath, for the DDP buckets.
  Communicator& inner() { return *inner_; }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string name() const override { return inner_->name(); }
  void AllReduce(at::Tensor& tensor, ReduceOp op, std::chrono::milliseconds timeout) override {
    before_();
    inner_->AllReduce(tensor, op, timeout);
  }
  void Broadcast(at::Tensor& tensor, int root, std::chrono::milliseconds timeout) override {
    before_();
    inner_->Broadcast(tensor, root, timeout);
  }
  at::Tensor AllGather(const at::Tensor& input, std::chrono::milliseconds timeout) override {
    before_();
    return inner_->AllGather(input, timeout);
  }
  void Barrier(std::chrono::milliseconds timeout) override {
    before_();
    inner_->Barrier(timeout);
  }
  void Abort() override { inner_->Abort(); }

 private:
  std::unique_ptr<Communicator> inner_;
  std::function<void()> before_;
};

}  // namespace accel::worker

#endif  // ACCEL_WORKER_DDP_ORDERED_COMMUNICATOR_H_
