// The progress file's layout (ACCEL_PROGRESS_FILE, common/env_contract.h): what a libaccel worker
// keeps up to date and the launcher reads for hang detection and the job's status. Six
// little-endian 64-bit words, 48 bytes in all: the optimizer steps taken, the collectives
// started and the collectives completed (all ranks issue collectives in the same order, so these
// counts say which collective a rank is in or has not reached), the nanoseconds the training
// thread waited for communication (its own collectives and DDP's end of backward: what is left of
// a step is the rank's own work), the samples of the batches its prepared loaders handed out, and
// when the wait in progress began (CLOCK_MONOTONIC nanoseconds; 0 = not waiting). Shorter files
// come from older writers: 8 bytes is a step count alone, 32 bytes adds the collective counts.
// Standard library only and header-only: libaccel and the launcher both include it.
#ifndef ACCEL_COMMON_PROGRESS_RECORD_H_
#define ACCEL_COMMON_PROGRESS_RECORD_H_

#include <cstddef>
#include <cstdint>

namespace accel::progress {

inline constexpr int kStepWord = 0;
inline constexpr int kStartedWord = 1;
inline constexpr int kDoneWord = 2;
inline constexpr int kCollectiveNanosWord = 3;
inline constexpr int kSamplesWord = 4;
inline constexpr int kWaitSinceWord = 5;
inline constexpr int kWords = 6;
inline constexpr std::size_t kFileBytes = kWords * 8;

struct Record {
  std::uint64_t step = 0;
  std::uint64_t collectives_started = 0;
  std::uint64_t collectives_done = 0;
  bool has_collectives = false;     // the file held the collective counts
  std::uint64_t collective_ns = 0;  // time waiting for communication (ended waits)
  std::uint64_t samples = 0;        // samples of the batches handed out
  std::uint64_t wait_since_ns = 0;  // CLOCK_MONOTONIC start of the wait in progress; 0 = none
  bool has_timing = false;          // the file held collective_ns and samples

  // Returns true while a collective has started and not completed.
  bool in_collective() const { return collectives_started > collectives_done; }
  // Hang detection's notion of progress: steps and collectives (not time or samples).
  bool operator==(const Record& other) const {
    return step == other.step && collectives_started == other.collectives_started &&
           collectives_done == other.collectives_done;
  }
  bool operator!=(const Record& other) const { return !(*this == other); }
};

// Returns the little-endian word `index` of `bytes`.
inline std::uint64_t DecodeWord(const unsigned char* bytes, int index) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[index * 8 + i];
  return value;
}

// Returns the record in the first `size` bytes of a progress file (size >= 8).
inline Record DecodeRecord(const unsigned char* bytes, std::size_t size) {
  Record record;
  record.step = DecodeWord(bytes, kStepWord);
  if (size >= 3 * 8) {
    record.collectives_started = DecodeWord(bytes, kStartedWord);
    record.collectives_done = DecodeWord(bytes, kDoneWord);
    record.has_collectives = true;
  }
  if (size >= 5 * 8) {
    record.collective_ns = DecodeWord(bytes, kCollectiveNanosWord);
    record.samples = DecodeWord(bytes, kSamplesWord);
    record.has_timing = true;
  }
  if (size >= 6 * 8) record.wait_since_ns = DecodeWord(bytes, kWaitSinceWord);
  return record;
}

}  // namespace accel::progress

#endif  // ACCEL_COMMON_PROGRESS_RECORD_H_
