// The progress file's layout (ACCEL_PROGRESS_FILE, common/env_contract.h): what a libaccel worker
// keeps up to date and the launcher reads for hang detection. Four little-endian 64-bit words,
// 32 bytes in all: the optimizer steps taken, the collectives started and the collectives
// completed (all ranks issue collectives in the same order, so these counts say which collective
// a rank is in or has not reached), and one reserved word. A file of only the first word (8
// bytes, an older writer) is a step count with no collective counts. Standard library only and
// header-only: libaccel and the launcher both include it.
#ifndef ACCEL_COMMON_PROGRESS_RECORD_H_
#define ACCEL_COMMON_PROGRESS_RECORD_H_

#include <cstddef>
#include <cstdint>

namespace accel::progress {

inline constexpr int kStepWord = 0;
inline constexpr int kStartedWord = 1;
inline constexpr int kDoneWord = 2;
inline constexpr int kWords = 4;
inline constexpr std::size_t kFileBytes = kWords * 8;

struct Record {
  std::uint64_t step = 0;
  std::uint64_t collectives_started = 0;
  std::uint64_t collectives_done = 0;
  bool has_collectives = false;  // the file held the collective words

  // Returns true while a collective has started and not completed.
  bool in_collective() const { return collectives_started > collectives_done; }
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
  return record;
}

}  // namespace accel::progress

#endif  // ACCEL_COMMON_PROGRESS_RECORD_H_
