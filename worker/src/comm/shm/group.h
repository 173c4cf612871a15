// ShmGroup: collectives among the ranks of one machine through one shared segment.
//
// All-reduce: the buffer goes through in chunks of at most one slot; each chunk is split into one
// slice per rank (cache-line aligned). Rank r copies the slices the others reduce into its slot,
// then reduces slice r itself — its own contribution read from its own tensor, the others' from
// their slots, in rank order — writing the result to its tensor and to its slot, then copies the
// other slices' results back. Per chunk: two barriers, and about two memcpys' worth of traffic
// per rank. Two sets of slots alternate, so a chunk's copies never wait for the previous chunk's
// readers. Broadcast: the root copies a chunk into its slot, one barrier, the others copy it out.
//
// Every call has a deadline and fails everywhere, naming the culprit, when a rank exits, misses
// the deadline, calls Fail, or calls another collective (count, dtype, op, root: ShmSync). Not
// thread-safe, except Fail.
#ifndef ACCEL_WORKER_COMM_SHM_GROUP_H_
#define ACCEL_WORKER_COMM_SHM_GROUP_H_

#include <c10/core/ScalarType.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "accel/communicator.h"
#include "worker/src/comm/shm/segment.h"
#include "worker/src/comm/shm/sync.h"
#include "worker/src/store/kv.h"

namespace accel::worker::shm {

class ShmGroup {
 public:
  using Clock = std::chrono::steady_clock;

  // Forms the group of `ranks` ranks: local rank 0 creates the segment (`slot_bytes` per slot)
  // and publishes where it is under `key` in `kv`; the others wait for that (deadline `timeout`)
  // and map it. Returns once every rank attached. Throws accel::Error.
  static std::unique_ptr<ShmGroup> Connect(Kv& kv, const std::string& key, int local_rank,
                                           int ranks, int global_rank, std::size_t slot_bytes,
                                           std::chrono::milliseconds timeout);

  int local_rank() const { return local_rank_; }
  int size() const { return ranks_; }

  // Reduces `count` elements of `dtype` at `data` (this process's memory) in place over the
  // group; kAvg divides the sum by `divisor`.
  void AllReduce(void* data, c10::ScalarType dtype, std::int64_t count, ReduceOp op, int divisor,
                 Clock::time_point deadline);
  // Copies `bytes` at local rank `root`'s `data` into every rank's `data`.
  void Broadcast(void* data, std::size_t bytes, int root, Clock::time_point deadline);
  void Barrier(Clock::time_point deadline);
  // Fails the group for every rank with `reason` (thread-safe).
  void Fail(const std::string& reason) { sync_.Fail(reason); }
  // FUTEX_WAKE calls issued in this group so far (tests).
  std::uint32_t wakeups() const { return sync_.wakeups(); }

 private:
  ShmGroup(ShmSegment segment, int local_rank, int ranks);

  ShmSegment segment_;
  const int local_rank_;
  const int ranks_;
  ShmSync sync_;
  std::uint64_t chunk_ = 0;  // chunks moved so far: its parity picks the set of slots
};

}  // namespace accel::worker::shm

#endif  // ACCEL_WORKER_COMM_SHM_GROUP_H_
