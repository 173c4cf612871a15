// accel::Communicator: collectives over one process group, every call with a deadline.
//
// Implementations (chosen by the Accelerator from device and environment):
// GlooCommunicator (CPU tensors, TCP, connects through the rendezvous store), NcclCommunicator
// (CUDA tensors, own stream ordered after the caller's current stream), MpiCommunicator (started
// by mpirun/srun), and a local one for a world of 1.
//
// Contract: all ranks must issue the same collectives in the same order. Calls block the calling
// thread until the result is in place (NCCL: until the collective completed on the device) or the
// deadline passes; then the communicator is aborted and the call throws accel::Error. After an
// abort every call throws. One call at a time per communicator (calls are serialized by an
// internal mutex); Abort() may be called from any thread and wakes a blocked call.
#ifndef ACCEL_COMMUNICATOR_H_
#define ACCEL_COMMUNICATOR_H_

#include <ATen/core/Tensor.h>

#include <chrono>
#include <string>

namespace accel {

enum class ReduceOp { kSum, kAvg, kMax, kMin };

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "gloo", "nccl", "mpi" or "local".
  virtual std::string name() const = 0;

  // Reduces `tensor` (contiguous) in place over all ranks. kAvg divides by size() (integer
  // tensors: truncating division).
  virtual void AllReduce(at::Tensor& tensor, ReduceOp op, std::chrono::milliseconds timeout) = 0;

  // Copies root's `tensor` into every rank's `tensor` (same shape and dtype everywhere).
  virtual void Broadcast(at::Tensor& tensor, int root, std::chrono::milliseconds timeout) = 0;

  // Returns a tensor of shape [size(), input.sizes()...] holding every rank's input, in rank
  // order. Every rank passes the same shape and dtype.
  virtual at::Tensor AllGather(const at::Tensor& input, std::chrono::milliseconds timeout) = 0;

  // Returns once every rank has entered Barrier.
  virtual void Barrier(std::chrono::milliseconds timeout) = 0;

  // Tears the group down so that pending and future calls fail. Thread-safe, idempotent.
  virtual void Abort() = 0;
};

const char* ToString(ReduceOp op);

}  // namespace accel

#endif  // ACCEL_COMMUNICATOR_H_
