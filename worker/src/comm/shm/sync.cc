#include "worker/src/comm/shm/sync.h"

#include <c10/core/ScalarType.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "accel/communicator.h"
#include "accel/error.h"
#include "common/overlap.h"

namespace accel::worker::shm {
namespace {

using std::chrono::microseconds;

// How long a waiter spins before sleeping, when spinning is allowed at all.
constexpr microseconds kSpin{50};
// The longest single sleep: how often a waiter checks the deadline and its peers' liveness.
constexpr microseconds kSlice{20000};

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// True when the 32-bit counter `value` has reached `target` (wrap-safe).
inline bool Reached(std::uint32_t value, std::uint32_t target) {
  return static_cast<std::int32_t>(value - target) >= 0;
}

std::uint32_t* Word(const std::atomic<std::uint32_t>& a) {
  return reinterpret_cast<std::uint32_t*>(const_cast<std::atomic<std::uint32_t>*>(&a));
}

}  // namespace

ShmSync::ShmSync(const ShmSegment& segment, int local_rank, int ranks)
    : segment_(segment),
      local_rank_(local_rank),
      ranks_(ranks),
      spin_(ranks <= UsableCores()),
      pidfds_(static_cast<std::size_t>(ranks)) {}

void ShmSync::WatchPeers() {
  pids_.assign(static_cast<std::size_t>(ranks_), 0);
  for (int r = 0; r < ranks_; ++r) {
    if (r == local_rank_) continue;
    const int pid = segment_.ctrl(r)->pid.load(std::memory_order_acquire);
    pids_[r] = pid;
    pidfds_[r].reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfds_[r] && errno == ESRCH) {
      const std::string reason = Describe(r) + " exited before the group was formed";
      Fail(reason);
      Throw("connect shm", reason);
    }
    // Other failures (ENOSYS before Linux 5.3, EPERM under a seccomp profile): Exited() falls
    // back to kill(pid, 0) and /proc/<pid>/stat.
  }
}

bool ShmSync::Exited(int r) const {
  if (pidfds_[r]) {
    pollfd fd{pidfds_[r].get(), POLLIN, 0};
    return ::poll(&fd, 1, 0) > 0 && (fd.revents & (POLLIN | POLLHUP)) != 0;
  }
  if (pids_.empty() || pids_[r] <= 0) return false;
  if (::kill(pids_[r], 0) != 0 && errno == ESRCH) return true;
  // A zombie (exited, not yet reaped by its parent) still answers kill().
  std::ifstream stat("/proc/" + std::to_string(pids_[r]) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return false;
  const char state = line[paren + 2];
  return state == 'Z' || state == 'X';
}

std::uint32_t ShmSync::wakeups() const { return segment_.header()->wake.load(); }

std::uint64_t ShmSync::Signature::Packed() const {
  return static_cast<std::uint64_t>(kind) | static_cast<std::uint64_t>(dtype) << 8 |
         static_cast<std::uint64_t>(op) << 16 | static_cast<std::uint64_t>(root) << 24;
}

ShmSync::Signature ShmSync::Signature::Unpack(std::uint64_t call, std::uint64_t count) {
  Signature s;
  s.kind = static_cast<Kind>(call & 0xff);
  s.dtype = static_cast<std::uint8_t>(call >> 8 & 0xff);
  s.op = static_cast<std::uint8_t>(call >> 16 & 0xff);
  s.root = static_cast<std::uint16_t>(call >> 24 & 0xffff);
  s.count = count;
  return s;
}

std::string ShmSync::Signature::Describe() const {
  switch (kind) {
    case kBarrier:
      return "barrier";
    case kAllReduce:
      return std::string("all-reduce (") + ToString(static_cast<ReduceOp>(op)) + ") of " +
             std::to_string(count) + " " + c10::toString(static_cast<c10::ScalarType>(dtype));
    case kBroadcast:
      return "broadcast of " + std::to_string(count) + " bytes from local rank " +
             std::to_string(root);
  }
  return "?";
}

std::string ShmSync::Describe(int local_rank) const {
  const RankCtrl* c = segment_.ctrl(local_rank);
  return "local rank " + std::to_string(local_rank) + " (global rank " +
         std::to_string(c->global_rank.load()) + ", pid " + std::to_string(c->pid.load()) + ")";
}

bool ShmSync::AllArrived(std::uint32_t target) const {
  // seq_cst, not acquire: this load follows sleepers++ (and the arrival's store) in the
  // store-buffering pattern of the sleep/wake handshake.
  for (int r = 0; r < ranks_; ++r) {
    if (!Reached(segment_.ctrl(r)->seq.load(std::memory_order_seq_cst), target)) return false;
  }
  return true;
}

void ShmSync::CheckSignatures(const char* op, std::uint32_t target, const Signature& mine) {
  const std::uint64_t call = mine.Packed();
  for (int r = 0; r < ranks_; ++r) {
    if (r == local_rank_) continue;
    const RankCtrl* c = segment_.ctrl(r);
    const std::uint64_t their_call = c->call[target & 1].load(std::memory_order_relaxed);
    const std::uint64_t their_count = c->count[target & 1].load(std::memory_order_relaxed);
    if (their_call == call && their_count == mine.count) continue;
    const int first = std::min(r, local_rank_);
    const int second = std::max(r, local_rank_);
    const Signature theirs = Signature::Unpack(their_call, their_count);
    const Signature& a = first == local_rank_ ? mine : theirs;
    const Signature& b = first == local_rank_ ? theirs : mine;
    const std::string reason = "collective mismatch: " + Describe(first) + " called " +
                               a.Describe() + " while " + Describe(second) + " called " +
                               b.Describe() +
                               "; every rank must issue the same collectives in the same order";
    Fail(reason);
    Throw(op, reason);
  }
}

void ShmSync::Sleep(std::uint32_t seen_wake, microseconds slice) const {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(slice.count() / 1000000);
  ts.tv_nsec = static_cast<long>(slice.count() % 1000000) * 1000;
  // Not FUTEX_PRIVATE: the word is shared between processes.
  ::syscall(SYS_futex, Word(segment_.header()->wake), FUTEX_WAIT, seen_wake, &ts, nullptr, 0);
}

void ShmSync::WakeSleepers() const {
  Header* h = segment_.header();
  if (h->sleepers.load(std::memory_order_seq_cst) == 0) return;
  h->wake.fetch_add(1, std::memory_order_seq_cst);
  ::syscall(SYS_futex, Word(h->wake), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void ShmSync::Throw(const char* op, const std::string& reason) {
  throw Error(
      op, "(shm local rank " + std::to_string(local_rank_) + " of " + std::to_string(ranks_) + ")",
      reason);
}

void ShmSync::Fail(const std::string& reason) {
  Header* h = segment_.header();
  std::uint32_t expected = 0;
  if (h->claim.compare_exchange_strong(expected, static_cast<std::uint32_t>(local_rank_) + 1)) {
    const std::size_t n = std::min(reason.size(), kReasonBytes - 1);
    std::memcpy(h->reason, reason.data(), n);
    h->reason[n] = '\0';
    h->failed.store(static_cast<std::uint32_t>(local_rank_) + 1, std::memory_order_release);
  }
  h->wake.fetch_add(1, std::memory_order_seq_cst);
  ::syscall(SYS_futex, Word(h->wake), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void ShmSync::CheckFailed(const char* op) const {
  const Header* h = segment_.header();
  if (h->failed.load(std::memory_order_acquire) == 0) return;
  throw Error(
      op, "(shm local rank " + std::to_string(local_rank_) + " of " + std::to_string(ranks_) + ")",
      std::string("the group failed: ") + h->reason);
}

void ShmSync::CheckPeers(const char* op, std::uint32_t target, Clock::time_point deadline,
                         Clock::time_point start) {
  std::vector<int> laggards;
  for (int r = 0; r < ranks_; ++r) {
    if (Reached(segment_.ctrl(r)->seq.load(std::memory_order_acquire), target)) continue;
    laggards.push_back(r);
    if (r != local_rank_ && Exited(r)) {
      const std::string reason = Describe(r) + " exited";
      Fail(reason);
      Throw(op, reason);
    }
  }
  if (laggards.empty()) return;
  if (Clock::now() >= deadline) {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    std::string who;
    for (int r : laggards) who += (who.empty() ? "" : ", ") + Describe(r);
    const std::string reason =
        who + " did not arrive within " + std::to_string(waited.count()) + " ms (deadline)";
    Fail(reason);
    Throw(op, reason);
  }
}

void ShmSync::Barrier(const char* op, Clock::time_point deadline) {
  Barrier(op, deadline, Signature());
}

void ShmSync::Barrier(const char* op, Clock::time_point deadline, const Signature& signature) {
  CheckFailed(op);
  const std::uint32_t target = ++seq_;
  RankCtrl* me = segment_.ctrl(local_rank_);
  me->call[target & 1].store(signature.Packed(), std::memory_order_relaxed);
  me->count[target & 1].store(signature.count, std::memory_order_relaxed);
  me->seq.store(target, std::memory_order_seq_cst);  // publishes the signature too
  if (AllArrived(target)) {
    WakeSleepers();  // this arrival completed the barrier
    CheckSignatures(op, target, signature);
    return;
  }
  const Clock::time_point start = Clock::now();
  if (spin_) {
    for (unsigned i = 1;; ++i) {
      CpuRelax();
      if (AllArrived(target)) return CheckSignatures(op, target, signature);
      if ((i & 63) == 0 && Clock::now() - start > kSpin) break;
    }
  }
  Header* h = segment_.header();
  while (true) {
    const std::uint32_t seen = h->wake.load(std::memory_order_seq_cst);
    h->sleepers.fetch_add(1, std::memory_order_seq_cst);
    const bool done = AllArrived(target) || h->failed.load() != 0;
    if (!done) {
      const auto left = std::chrono::duration_cast<microseconds>(deadline - Clock::now());
      Sleep(seen, std::clamp(left, microseconds(1), kSlice));
    }
    h->sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (AllArrived(target)) return CheckSignatures(op, target, signature);
    CheckFailed(op);
    CheckPeers(op, target, deadline, start);
  }
}

void ShmSync::WaitCounter(const std::atomic<std::uint32_t>& counter, std::uint32_t target,
                          const char* op, Clock::time_point deadline) {
  Header* h = segment_.header();
  const Clock::time_point start = Clock::now();
  while (!Reached(counter.load(std::memory_order_acquire), target)) {
    CheckFailed(op);
    if (Clock::now() >= deadline) {
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
      const std::string reason = std::to_string(counter.load()) + " of " + std::to_string(target) +
                                 " ranks attached within " + std::to_string(waited.count()) +
                                 " ms (deadline)";
      Fail(reason);
      Throw(op, reason);
    }
    const std::uint32_t seen = h->wake.load(std::memory_order_seq_cst);
    h->sleepers.fetch_add(1, std::memory_order_seq_cst);
    if (!Reached(counter.load(std::memory_order_seq_cst), target)) {
      const auto left = std::chrono::duration_cast<microseconds>(deadline - Clock::now());
      Sleep(seen, std::clamp(left, microseconds(1), kSlice));
    }
    h->sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

}  // namespace accel::worker::shm
