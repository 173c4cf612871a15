// ShmSegment: the one shared memory segment of a machine's ranks, and its layout.
//
// The segment is an anonymous memfd created by the machine's leader (its lowest rank); the others
// open it through /proc/<leader pid>/fd/<fd> while the leader holds it open. It never has a name
// in /dev/shm, so no outcome — a clean exit, an exception, SIGKILL of every rank — can leak it:
// the kernel frees it when the last rank unmaps it. (A memfd is also not bound by the size of a
// container's /dev/shm mount.)
//
// Layout: a Header, one RankCtrl per local rank (own cache line), then the data area of
// 2 (double buffering) x ranks x slot_bytes.
#ifndef ACCEL_WORKER_COMM_SHM_SEGMENT_H_
#define ACCEL_WORKER_COMM_SHM_SEGMENT_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/unique_fd.h"

namespace accel::worker::shm {

inline constexpr std::uint64_t kMagic = 0x61636365'6c73686dULL;  // "accelshm"
inline constexpr std::size_t kReasonBytes = 240;

struct alignas(64) Header {
  std::uint64_t magic;
  std::uint64_t nonce;  // the leader's random number, published with the segment's location
  std::uint32_t ranks;
  std::uint32_t slot_bytes;
  std::atomic<std::uint32_t> attached;  // ranks that mapped the segment
  std::atomic<std::uint32_t> wake;      // futex word: bumped to wake sleepers
  std::atomic<std::uint32_t> sleepers;  // ranks in (or entering) a futex wait
  std::atomic<std::uint32_t> claim;     // 1 + local rank of the first failure, writing `reason`
  std::atomic<std::uint32_t> failed;    // 1 + local rank of the first failure, once `reason` is set
  char reason[kReasonBytes];
};

struct alignas(64) RankCtrl {
  std::atomic<std::uint32_t> seq;  // barriers passed; every rank moves in lockstep
  std::atomic<std::int32_t> pid;
  std::atomic<std::int32_t> global_rank;
  // The collective this rank is in at barrier seq, indexed by seq's parity (ShmSync::Signature):
  // a rank can rewrite a parity only two barriers later, after every rank compared it.
  std::atomic<std::uint64_t> call[2];
  std::atomic<std::uint64_t> count[2];
};

// Bytes of a segment for `ranks` ranks with slots of `slot_bytes`.
std::size_t SegmentBytes(int ranks, std::size_t slot_bytes);

class ShmSegment {
 public:
  // Creates and maps a zero-filled segment (leader). Throws accel::Error.
  static ShmSegment Create(std::size_t bytes);
  // Maps the leader's segment `fd` of process `pid`. Throws accel::Error (the leader is gone, or
  // /proc/<pid>/fd is not accessible).
  static ShmSegment Open(pid_t pid, int fd, std::size_t bytes);

  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&&) = delete;
  ShmSegment(const ShmSegment&) = delete;
  ~ShmSegment();

  // The descriptor others open while this rank (the leader) keeps it; -1 once closed.
  int fd() const { return fd_.get(); }
  // Closes the descriptor; the mapping stays.
  void CloseFd() { fd_.reset(); }

  std::size_t bytes() const { return bytes_; }
  Header* header() const { return static_cast<Header*>(base_); }
  RankCtrl* ctrl(int local_rank) const;
  // Slot `local_rank` of buffer `buffer` (0 or 1).
  std::uint8_t* slot(int buffer, int local_rank) const;

 private:
  ShmSegment(UniqueFd fd, void* base, std::size_t bytes);
  UniqueFd fd_;
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace accel::worker::shm

#endif  // ACCEL_WORKER_COMM_SHM_SEGMENT_H_
