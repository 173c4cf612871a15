// The NCCL probe (GPU jobs): GPU 0 of each machine, one communicator over every machine; links
// with ncclSend/ncclRecv, the all-reduce with ncclAllReduce. This file is the one adapter for NCCL
// and the CUDA runtime in accel-preflight: their error codes become errors here. Built only when
// CUDA and NCCL are found (ACCEL_PREFLIGHT_NCCL); otherwise RunNcclProbe says so.
#include "launcher/preflight/probe.h"

#if ACCEL_PREFLIGHT_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#endif

namespace accel::launcher {

#if !ACCEL_PREFLIGHT_NCCL

absl::StatusOr<ProbeResult> RunNcclProbe(rendezvous::Store&, const ProbeOptions&) {
  return absl::UnimplementedError("nccl: accel-preflight was built without CUDA and NCCL");
}

#else

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
constexpr int kRttRounds = 20;

#define ACCEL_CUDA(call)                                                                         \
  do {                                                                                           \
    if (cudaError_t e = (call); e != cudaSuccess) {                                              \
      return absl::UnavailableError(absl::StrCat("cuda: ", #call, ": ", cudaGetErrorString(e))); \
    }                                                                                            \
  } while (0)
#define ACCEL_NCCL(call)                                                                         \
  do {                                                                                           \
    if (ncclResult_t r = (call); r != ncclSuccess) {                                             \
      return absl::UnavailableError(absl::StrCat("nccl: ", #call, ": ", ncclGetErrorString(r))); \
    }                                                                                            \
  } while (0)

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Owns the communicator, its stream and device buffers.
class NcclProbe {
 public:
  ~NcclProbe() {
    if (comm_ != nullptr) ncclCommAbort(comm_);
    if (buffer_ != nullptr) cudaFree(buffer_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  absl::Status Connect(rendezvous::Store& store, const ProbeOptions& o) {
    ACCEL_CUDA(cudaSetDevice(0));
    ACCEL_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    bytes_ = std::max<std::size_t>(kChunkBytes, static_cast<std::size_t>(o.bucket_bytes));
    ACCEL_CUDA(cudaMalloc(&buffer_, bytes_));
    ACCEL_CUDA(cudaMemset(buffer_, 0, bytes_));
    ncclUniqueId id;
    if (o.rank == 0) {
      ACCEL_NCCL(ncclGetUniqueId(&id));
      absl::Status set = store.Set("nccl-id", std::string(id.internal, sizeof(id.internal)));
      if (!set.ok()) return set;
    } else {
      absl::StatusOr<std::string> got = store.Get("nccl-id", o.timeout);
      if (!got.ok()) return got.status();
      if (got->size() != sizeof(id.internal)) return absl::DataLossError("nccl: bad unique id");
      std::memcpy(id.internal, got->data(), sizeof(id.internal));
    }
    ACCEL_NCCL(ncclCommInitRank(&comm_, o.world, id, o.rank));
    return absl::OkStatus();
  }

  // Sends `bytes` to `peer` (or receives them) `times` times; returns the seconds it took.
  absl::StatusOr<double> Transfer(int peer, bool sender, std::size_t bytes, int times) {
    const auto start = Clock::now();
    for (int i = 0; i < times; ++i) {
      ACCEL_NCCL(ncclGroupStart());
      if (sender) {
        ACCEL_NCCL(ncclSend(buffer_, bytes, ncclChar, peer, comm_, stream_));
      } else {
        ACCEL_NCCL(ncclRecv(buffer_, bytes, ncclChar, peer, comm_, stream_));
      }
      ACCEL_NCCL(ncclGroupEnd());
    }
    ACCEL_CUDA(cudaStreamSynchronize(stream_));
    return std::max(1e-9, Seconds(Clock::now() - start));
  }

  // Ping-pong of one byte; returns the median round trip.
  absl::StatusOr<double> RoundTrip(int peer, bool sender) {
    std::vector<double> rtts;
    for (int i = 0; i < kRttRounds; ++i) {
      absl::StatusOr<double> there = Transfer(peer, sender, 1, 1);
      if (!there.ok()) return there.status();
      absl::StatusOr<double> back = Transfer(peer, !sender, 1, 1);
      if (!back.ok()) return back.status();
      rtts.push_back(*there + *back);
    }
    std::sort(rtts.begin(), rtts.end());
    return rtts[rtts.size() / 2];
  }

  absl::Status Barrier() {
    ACCEL_NCCL(ncclAllReduce(buffer_, buffer_, 1, ncclFloat, ncclSum, comm_, stream_));
    ACCEL_CUDA(cudaStreamSynchronize(stream_));
    return absl::OkStatus();
  }

  absl::StatusOr<double> AllReduce(std::size_t bytes) {
    std::vector<double> times;
    for (int i = 0; i < 4; ++i) {  // one warm-up, three timed
      const auto start = Clock::now();
      ACCEL_NCCL(ncclAllReduce(buffer_, buffer_, bytes / 4, ncclFloat, ncclSum, comm_, stream_));
      ACCEL_CUDA(cudaStreamSynchronize(stream_));
      if (i > 0) times.push_back(Seconds(Clock::now() - start));
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  }

 private:
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* buffer_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace

absl::StatusOr<ProbeResult> RunNcclProbe(rendezvous::Store& store, const ProbeOptions& o) {
  NcclProbe probe;
  if (absl::Status s = probe.Connect(store, o); !s.ok()) return s;
  ProbeResult result;
  for (const auto& [from, to] : LinkOrder(o.world)) {
    if (o.rank == from || o.rank == to) {
      const bool sender = o.rank == from;
      const int peer = sender ? to : from;
      absl::StatusOr<double> rtt = probe.RoundTrip(peer, sender);
      if (!rtt.ok()) return rtt.status();
      absl::StatusOr<double> one = probe.Transfer(peer, sender, kChunkBytes, 1);
      if (!one.ok()) return one.status();
      // A fixed stream both ends know (the first transfer warmed the link up): 64 MiB.
      constexpr int kChunks = 64;
      absl::StatusOr<double> many = probe.Transfer(peer, sender, kChunkBytes, kChunks);
      if (!many.ok()) return many.status();
      if (sender) result.outgoing.push_back({from, to, kChunks * kChunkBytes / *many, *rtt});
    }
    if (absl::Status s = probe.Barrier(); !s.ok()) return s;
  }
  absl::StatusOr<double> allreduce = probe.AllReduce(static_cast<std::size_t>(o.bucket_bytes));
  if (!allreduce.ok()) return allreduce.status();
  result.allreduce_s = *allreduce;
  return result;
}

#endif

}  // namespace accel::launcher
