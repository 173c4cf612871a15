// ShmSync: the barrier of a machine's ranks over a ShmSegment, with deadlines, peer-death
// detection and failure propagation.
//
// Every rank owns a sequence counter (RankCtrl::seq); Arrive() bumps it, Wait() returns once
// every rank's counter reached this rank's. A waiter spins briefly only when every rank has a
// core of its own; otherwise, and after the spin, it sleeps in FUTEX_WAIT on Header::wake (a
// shared-memory futex, with a timeout slice) and an arriving rank wakes the sleepers. So 4 ranks
// on 2 cores never burn the core the laggard needs.
//
// While waiting, peers that have not arrived are checked through pidfds: an exited peer, the
// deadline, or Fail() from any rank ends the wait everywhere with accel::Error naming the rank
// (its local and global rank and pid). The first failure wins and is recorded in the segment, so
// every rank reports the same cause.
//
// Not thread-safe, except Fail(), which any thread may call (it wakes a blocked Wait).
#ifndef ACCEL_WORKER_COMM_SHM_SYNC_H_
#define ACCEL_WORKER_COMM_SHM_SYNC_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "worker/src/comm/shm/segment.h"

namespace accel::worker::shm {

class ShmSync {
 public:
  using Clock = std::chrono::steady_clock;

  // `segment` must outlive this; `local_rank` is this rank's index in it.
  ShmSync(const ShmSegment& segment, int local_rank, int ranks);

  // Opens pidfds for every peer (their pids are in the segment once all attached).
  void WatchPeers();

  // Arrives at the next barrier and waits for every rank, up to `deadline`. `op` names the
  // operation in errors.
  void Barrier(const char* op, Clock::time_point deadline);

  // Records `reason` as the group's failure (unless one is recorded already) and wakes everyone.
  void Fail(const std::string& reason);
  // Throws accel::Error if any rank recorded a failure.
  void CheckFailed(const char* op) const;

  // Waits until `counter` >= `target` (attach), with the same sleeping and deadline rules.
  void WaitCounter(const std::atomic<std::uint32_t>& counter, std::uint32_t target, const char* op,
                   Clock::time_point deadline);

  // Wakes every rank sleeping in Barrier or WaitCounter (after bumping a counter they wait on).
  void WakeSleepers() const;

  std::string Describe(int local_rank) const;  // "local rank 1 (global rank 3, pid 4242)"

 private:
  bool AllArrived(std::uint32_t target) const;
  // Sleeps (futex) until woken or `slice` passes.
  void Sleep(std::uint32_t seen_wake, std::chrono::microseconds slice) const;
  // Throws when the deadline passed or a peer that has not reached `target` exited.
  void CheckPeers(const char* op, std::uint32_t target, Clock::time_point deadline,
                  Clock::time_point start);
  [[noreturn]] void Throw(const char* op, const std::string& reason);

  const ShmSegment& segment_;
  const int local_rank_;
  const int ranks_;
  const bool spin_;  // every rank has a core: a short spin beats a futex round trip
  std::uint32_t seq_ = 0;
  std::vector<UniqueFd> pidfds_;  // per local rank (own: invalid)
};

}  // namespace accel::worker::shm

#endif  // ACCEL_WORKER_COMM_SHM_SYNC_H_
