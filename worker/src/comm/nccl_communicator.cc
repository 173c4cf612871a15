// NcclCommunicator: CUDA collectives through NCCL.
//
// Ordering: each collective runs on the communicator's own stream; an event recorded on the
// caller's current CUDA stream (torch's current stream when LibTorch has CUDA, else the legacy
// default stream) makes it start after the compute that produced the tensor, and the caller's
// host waits for the collective's completion event before returning, so nothing later can touch
// the tensor early. The host polls the completion event and ncclCommGetAsyncError (sleeping between
// polls) until done, an asynchronous NCCL error, or the deadline; on error or deadline the
// communicator is aborted with ncclCommAbort. Every CUDA and NCCL return code is checked.
//
// Abort from another thread (DDP's training thread while the communication thread polls) only
// raises the flag when a call is running; that call sees the flag on its next poll, calls
// ncclCommAbort itself and throws, so the communicator is never freed under a thread still using
// it. With no call running, Abort aborts the communicator at once.
//
// Owns the NCCL communicator, its stream and two events (RAII).
#include <ATen/ATen.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#if ACCEL_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "accel/error.h"
#include "worker/src/comm/factory.h"

namespace accel::worker {
namespace {

using Clock = std::chrono::steady_clock;

std::string CudaError(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

void CheckCuda(cudaError_t e, const char* op, const std::string& subject) {
  if (e != cudaSuccess) throw Error(op, subject, CudaError(e));
}

ncclDataType_t NcclType(at::ScalarType t, const std::string& subject) {
  switch (t) {
    case at::kFloat:
      return ncclFloat32;
    case at::kHalf:
      return ncclFloat16;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    case at::kBFloat16:
      return ncclBfloat16;
#endif
    case at::kDouble:
      return ncclFloat64;
    case at::kInt:
      return ncclInt32;
    case at::kLong:
      return ncclInt64;
    case at::kByte:
      return ncclUint8;
    case at::kChar:
      return ncclInt8;
    default:
      throw Error("nccl collective", subject, std::string("unsupported dtype ") + c10::toString(t));
  }
}

ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAvg:
      return ncclAvg;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
  }
  return ncclSum;
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
constexpr ncclResult_t kNcclInProgress = ncclInProgress;
#else
// NCCL before 2.14 has no non-blocking calls and no ncclInProgress: nothing returns this value
// (the next free one), so the waits below end at once.
constexpr ncclResult_t kNcclInProgress = static_cast<ncclResult_t>(ncclInvalidUsage + 2);
#endif

// Waits for a non-blocking communicator to leave ncclInProgress (init, enqueue), up to deadline
// or until `*abort` is raised (then returns kNcclInProgress too).
ncclResult_t WaitInProgress(ncclComm_t comm, ncclResult_t result, Clock::time_point deadline,
                            const std::atomic<bool>* abort = nullptr) {
  while (result == kNcclInProgress) {
    if (Clock::now() >= deadline || (abort != nullptr && abort->load())) return kNcclInProgress;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (ncclCommGetAsyncError(comm, &result) != ncclSuccess) return ncclInternalError;
  }
  return result;
}

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int rank, int size, int device)
      : comm_(comm), rank_(rank), size_(size), device_(device) {
    CheckCuda(cudaSetDevice(device_), "create nccl stream", Subject());
    CheckCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "create nccl stream",
              Subject());
    CheckCuda(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming), "create nccl event",
              Subject());
    CheckCuda(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "create nccl event",
              Subject());
  }

  ~NcclCommunicator() override {
    if (!comm_aborted_) ncclCommDestroy(comm_);
    cudaEventDestroy(done_);
    cudaEventDestroy(ready_);
    cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "nccl"; }

  void AllReduce(at::Tensor& tensor, ReduceOp op, std::chrono::milliseconds timeout) override {
    Run("all-reduce", tensor, timeout, [&] {
      return ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(),
                           static_cast<size_t>(tensor.numel()),
                           NcclType(tensor.scalar_type(), Subject()), NcclOp(op), comm_, stream_);
    });
  }

  void Broadcast(at::Tensor& tensor, int root, std::chrono::milliseconds timeout) override {
    Run("broadcast", tensor, timeout, [&] {
      return ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(), tensor.nbytes(), ncclUint8, root,
                           comm_, stream_);
    });
  }

  at::Tensor AllGather(const at::Tensor& input, std::chrono::milliseconds timeout) override {
    at::Tensor in = input.contiguous();
    std::vector<int64_t> shape{size_};
    shape.insert(shape.end(), in.sizes().begin(), in.sizes().end());
    at::Tensor out = at::empty(shape, in.options());
    Run("all-gather", in, timeout, [&] {
      return ncclAllGather(in.data_ptr(), out.data_ptr(), in.nbytes(), ncclUint8, comm_, stream_);
    });
    return out;
  }

  void Barrier(std::chrono::milliseconds timeout) override {
    at::Tensor one =
        at::ones({1}, at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, device_));
    AllReduce(one, ReduceOp::kSum, timeout);
  }

  void Abort() override {
    aborted_ = true;
    // A running call owns comm_: it notices the flag and aborts it itself (see the file comment).
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (lock.owns_lock()) AbortLocked();
  }

 private:
  std::string Subject() const {
    return "(nccl rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
           ", cuda:" + std::to_string(device_) + ")";
  }

  cudaStream_t CallerStream() const {
#if ACCEL_TORCH_CUDA
    return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_)).stream();
#else
    return cudaStreamLegacy;
#endif
  }

  // Aborts comm_ once; mu_ held.
  void AbortLocked() {
    aborted_ = true;
    if (comm_aborted_) return;
    comm_aborted_ = true;
    ncclCommAbort(comm_);
  }

  template <typename Enqueue>
  void Run(const char* op, const at::Tensor& tensor, std::chrono::milliseconds timeout,
           Enqueue&& enqueue) {
    std::lock_guard<std::mutex> lock(mu_);
    try {
      RunLocked(op, tensor, timeout, std::forward<Enqueue>(enqueue));
    } catch (...) {
      AbortLocked();
      throw;
    }
    // An Abort that raced with the end of this call: honour it now, under the lock.
    if (aborted_) AbortLocked();
  }

  template <typename Enqueue>
  void RunLocked(const char* op, const at::Tensor& tensor, std::chrono::milliseconds timeout,
                 Enqueue&& enqueue) {
    const auto deadline = Clock::now() + timeout;
    if (aborted_) throw Error(op, Subject(), "communicator was aborted");
    if (!tensor.is_cuda() || tensor.device().index() != device_) {
      throw Error(op, Subject(), "tensor is not on cuda:" + std::to_string(device_));
    }
    if (!tensor.is_contiguous()) throw Error(op, Subject(), "tensor is not contiguous");
    CheckCuda(cudaSetDevice(device_), op, Subject());
    const cudaStream_t caller = CallerStream();
    CheckCuda(cudaEventRecord(ready_, caller), op, Subject());
    CheckCuda(cudaStreamWaitEvent(stream_, ready_, 0), op, Subject());
    ncclResult_t result = WaitInProgress(comm_, enqueue(), deadline, &aborted_);
    if (aborted_) throw Error(op, Subject(), "communicator was aborted");
    if (result != ncclSuccess) Fail(op, result, "enqueue");
    CheckCuda(cudaEventRecord(done_, stream_), op, Subject());
    // No cudaStreamWaitEvent(caller, done_): the host waits for done_ below, so any work enqueued
    // after this call returns sees the result, and the caller's stream keeps computing (e.g. the
    // rest of backward) while the collective runs.
    auto pause = std::chrono::microseconds(20);
    while (true) {
      const cudaError_t q = cudaEventQuery(done_);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) throw Error(op, Subject(), CudaError(q));
      if (aborted_) throw Error(op, Subject(), "communicator was aborted while waiting");
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(comm_, &async) != ncclSuccess ||
          (async != ncclSuccess && async != kNcclInProgress)) {
        Fail(op, async, "asynchronous error");
      }
      if (Clock::now() >= deadline) {
        throw Error(op, Subject(),
                    "deadline of " + std::to_string(timeout.count()) +
                        " ms exceeded; communicator aborted");
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }

  [[noreturn]] void Fail(const char* op, ncclResult_t result, const char* stage) {
    std::string detail = ncclGetErrorString(result);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
    if (const char* last = ncclGetLastError(comm_); last != nullptr && *last != '\0') {
      detail += " (" + std::string(last) + ")";
    }
#endif
    throw Error(op, Subject(), std::string(stage) + ": " + detail);
  }

  ncclComm_t comm_;
  const int rank_;
  const int size_;
  const int device_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  cudaEvent_t done_ = nullptr;
  std::mutex mu_;                     // one call at a time; whoever holds it owns comm_
  std::atomic<bool> aborted_{false};  // Abort() was called (by any thread)
  bool comm_aborted_ = false;         // ncclCommAbort done (under mu_)
};

}  // namespace

std::unique_ptr<Communicator> MakeNcclCommunicator(Kv* kv, const GroupSpec& spec,
                                                   int device_index) {
  const std::string subject = "rank " + std::to_string(spec.rank) + " of " +
                              std::to_string(spec.size) +
                              " on cuda:" + std::to_string(device_index);
  const auto deadline = Clock::now() + spec.timeout;
  CheckCuda(cudaSetDevice(device_index), "connect nccl", subject);
  ncclUniqueId id;
  const std::string key = spec.key_prefix + "nccl/unique_id";
  if (spec.rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess)
      throw Error("connect nccl", subject,
                  std::string("ncclGetUniqueId: ") + ncclGetErrorString(r));
    if (kv != nullptr) kv->Set(key, std::string(id.internal, sizeof(id.internal)));
  } else {
    if (kv == nullptr)
      throw Error("connect nccl", subject, "world > 1 needs a store for the unique id");
    const std::string bytes = kv->Get(key, spec.timeout);
    if (bytes.size() != sizeof(id.internal)) {
      throw Error("connect nccl", subject, "malformed unique id in the store");
    }
    std::memcpy(id.internal, bytes.data(), sizeof(id.internal));
  }
  ncclComm_t comm = nullptr;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // non-blocking init so the deadline holds
  ncclResult_t r = ncclCommInitRankConfig(&comm, spec.size, id, spec.rank, &config);
  if (comm != nullptr) r = WaitInProgress(comm, r, deadline);
#else
  // A blocking init: the deadline cannot bound it (the launcher's hang watch does).
  static_cast<void>(deadline);
  ncclResult_t r = ncclCommInitRank(&comm, spec.size, id, spec.rank);
#endif
  if (r != ncclSuccess) {
    if (comm != nullptr) ncclCommAbort(comm);
    throw Error("connect nccl", subject,
                r == kNcclInProgress ? "deadline of " + std::to_string(spec.timeout.count()) +
                                           " ms exceeded waiting for peers"
                                     : std::string(ncclGetErrorString(r)));
  }
  try {
    return std::make_unique<NcclCommunicator>(comm, spec.rank, spec.size, device_index);
  } catch (...) {
    ncclCommAbort(comm);
    throw;
  }
}

}  // namespace accel::worker
