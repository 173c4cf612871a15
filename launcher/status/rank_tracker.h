// RankTracker: this machine's ranks for the job's status. The supervisor tells it when a worker
// starts and exits; each Sample reads every live rank's progress file (common/progress_record.h)
// and process state, and keeps the samples of the last window so that Statuses can give each
// rank's pace (rank_status.h). Not thread-safe: the owner serialises calls.
#ifndef ACCEL_LAUNCHER_STATUS_RANK_TRACKER_H_
#define ACCEL_LAUNCHER_STATUS_RANK_TRACKER_H_

#include <sys/types.h>

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/defaults.h"
#include "common/progress_record.h"
#include "launcher/status/rank_status.h"

namespace accel::launcher {

// Reads a progress file (nullopt: none yet); returns whether a process tree has a stopped process.
using ProgressReader = std::function<std::optional<progress::Record>(const std::string& path)>;
using StoppedProbe = std::function<bool(pid_t pid)>;

class RankTracker {
 public:
  // Null `read`/`stopped` = the real ones (hang.h's ReadProgressFile, proc_stat.h's process tree).
  RankTracker(int machine_rank, std::string host,
              absl::Duration window = absl::FromChrono(defaults::kStragglerWindow),
              ProgressReader read = nullptr, StoppedProbe stopped = nullptr);

  // A worker started (its progress file at `progress_path`; "" = none).
  void Started(int rank, int local_rank, pid_t pid, std::string progress_path, absl::Time now);
  // A worker exited with `exit_code`, or was killed by `signal` (non-zero).
  void Exited(int rank, int exit_code, int signal, absl::Time now);
  // Reads every live rank.
  void Sample(absl::Time now);
  // Returns every rank this attempt started, ordered by rank.
  std::vector<RankStatus> Statuses(absl::Time now) const;

 private:
  struct Point {
    absl::Time time;
    progress::Record record;
    bool stopped = false;  // a process of the rank was stopped when this sample was taken
  };
  struct Tracked {
    int local_rank = 0;
    pid_t pid = 0;
    std::string progress_path;
    absl::Time started;
    absl::Time changed;           // when the record last changed (started until one is read)
    std::deque<Point> history;    // the window, oldest first, at least one point a window old
    std::optional<Point> before;  // the sample before the latest (the last interval)
    bool stopped = false;
    bool exited = false;
    int exit_code = 0;
    int exit_signal = 0;
  };
  void Read(Tracked& t, absl::Time now) const;
  RankStatus Status(int rank, const Tracked& t, absl::Time now) const;

  const int machine_rank_;
  const std::string host_;
  const absl::Duration window_;
  const ProgressReader read_;
  const StoppedProbe stopped_;
  std::map<int, Tracked> ranks_;
};

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_STATUS_RANK_TRACKER_H_
