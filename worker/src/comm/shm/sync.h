// ShmSync: the barrier of a machine's ranks over a ShmSegment, with deadlines, peer-death
// detection and failure propagation.
//
// Every rank owns a sequence counter (RankCtrl::seq); Arrive() bumps it, Wait() returns once
// every rank's counter reached this rank's. A waiter spins briefly only when every rank has a
// core of its own; otherwise, and after the spin, it sleeps in FUTEX_WAIT on Header::wake (a
// shared-memory futex, with a timeout slice) and an arriving rank wakes the sleepers. So 4 ranks
// on 2 cores never burn the core the laggard needs.
//
// Only the rank that completes a barrier (sees every rank arrived after its own arrival) wakes
// the sleepers: one FUTEX_WAKE per barrier, not one per arrival. The pre-sleep check and the
// arrival are both sequentially consistent (sleepers++ then load seq; store seq then load
// sleepers): with weaker loads (acquire, which Arm may satisfy early with LDAPR) both sides could
// miss each other and a waiter would sleep a whole slice. (On x86 both orders compile to the same
// instructions, and ThreadSanitizer treats them alike, so no test here can tell them apart; the
// publication half, arrival store and AllArrived loads, is checked by worker_shm_tsan.)
//
// Every barrier carries the caller's Signature (which collective, dtype, op, root, size); each
// rank compares everyone's once all arrived, so ranks that called different collectives fail at
// once, naming both calls, instead of pairing the wrong data.
//
// While waiting, peers that have not arrived are checked through pidfds (where pidfd_open fails
// for another reason than a dead peer, e.g. a seccomp profile: kill(pid, 0) and /proc): an exited
// peer, the deadline, or Fail() from any rank ends the wait everywhere with accel::Error naming
// the rank (its local and global rank and pid). The first failure wins and is recorded in the
// segment, so every rank reports the same cause.
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

  // What a rank is doing at a barrier; equal on every rank of a well-formed program.
  struct Signature {
    enum Kind : std::uint8_t { kBarrier = 1, kAllReduce = 2, kBroadcast = 3 };
    Kind kind = kBarrier;
    std::uint8_t dtype = 0;   // c10::ScalarType (all-reduce)
    std::uint8_t op = 0;      // ReduceOp (all-reduce)
    std::uint16_t root = 0;   // broadcast
    std::uint64_t count = 0;  // elements (all-reduce) or bytes (broadcast)
    std::uint64_t Packed() const;
    static Signature Unpack(std::uint64_t call, std::uint64_t count);
    std::string Describe() const;  // "all-reduce (sum) of 10 Float"
  };

  // `segment` must outlive this; `local_rank` is this rank's index in it.
  ShmSync(const ShmSegment& segment, int local_rank, int ranks);

  // Opens pidfds for every peer (their pids are in the segment once all attached). A peer that
  // is gone already fails the group at once, naming it.
  void WatchPeers();

  // Arrives at the next barrier and waits for every rank, up to `deadline`. `op` names the
  // operation in errors. Throws when another rank arrived with a different `signature`.
  void Barrier(const char* op, Clock::time_point deadline, const Signature& signature);
  void Barrier(const char* op, Clock::time_point deadline);  // a plain barrier

  // FUTEX_WAKE calls issued in this group so far (diagnostics and tests).
  std::uint32_t wakeups() const;

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
  void CheckSignatures(const char* op, std::uint32_t target, const Signature& mine);
  // Whether local rank r's process is gone (pidfd, or kill/proc where there is none).
  bool Exited(int r) const;
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
  std::vector<int> pids_;         // per local rank, for the fallback without a pidfd
};

}  // namespace accel::worker::shm

#endif  // ACCEL_WORKER_COMM_SHM_SYNC_H_
