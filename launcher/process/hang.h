// Hang detection: libaccel workers rewrite ACCEL_PROGRESS_FILE (an 8-byte little-endian step
// counter) as they train; the supervisor polls the files every monitor interval. A rank is
// watched from the first time its file holds a counter (programs that never write one, such as
// plain torch scripts, are never called hung). When no watched rank has advanced for `timeout`,
// Check returns them all, slowest (lowest step) first. Not thread-safe.
#ifndef ACCEL_LAUNCHER_PROCESS_HANG_H_
#define ACCEL_LAUNCHER_PROCESS_HANG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace accel::launcher {

struct StalledRank {
  int rank = 0;
  std::uint64_t step = 0;
  absl::Duration stalled_for;
};

// Returns the counter in the progress file at `path`, or nullopt when it has none yet.
std::optional<std::uint64_t> ReadProgressFile(const std::string& path);

class HangDetector {
 public:
  explicit HangDetector(absl::Duration timeout) : timeout_(timeout) {}

  // Starts watching `rank` through the progress file at `path`.
  void Watch(int rank, std::string path);
  // Stops watching `rank` (it exited).
  void Forget(int rank) { ranks_.erase(rank); }

  // Reads every file; returns the stalled ranks when none advanced for `timeout`, else empty.
  std::vector<StalledRank> Check(absl::Time now);

 private:
  struct Progress {
    std::string path;
    std::optional<std::uint64_t> step;
    absl::Time changed = absl::InfinitePast();
  };
  absl::Duration timeout_;
  std::map<int, Progress> ranks_;
};

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_PROCESS_HANG_H_
