// The whole job at a glance, from every rank's status (rank_status.h): what machine 0's status
// line and `accel-launch status` print, and which ranks or machines are stragglers.
//
// A straggler is a rank whose own work per step over a full window is more than `threshold`
// above the median rank's (the lower median: with two ranks, the faster one), and at least 1 ms
// above it. When every rank of
// a machine with two or more ranks is one, the machine is named instead of its ranks (a slow
// host). StragglerLog reports each one once, until it has recovered (work back below half the
// threshold above the median). Pure functions and a plain class; not thread-safe.
#ifndef ACCEL_LAUNCHER_STATUS_JOB_SUMMARY_H_
#define ACCEL_LAUNCHER_STATUS_JOB_SUMMARY_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "launcher/status/rank_status.h"

namespace accel::launcher {

struct JobSummary {
  int ranks = 0;
  int reporting = 0;    // ranks with a progress record
  int no_progress = 0;  // live ranks without one ("no progress reported")
  int exited = 0;
  int stopped = 0;
  std::uint64_t step = 0;  // the median step of the reporting ranks
  double samples_per_s = 0;
  bool has_samples = false;  // some rank counts samples
  double steps_per_s = 0;    // the median rank's
  // The rank with the most own work per step, measured over a window, and how it compares.
  std::optional<int> slowest_rank;
  int slowest_machine = 0;
  double slowest_slower = 0;         // its work per step / the median's - 1 (0.6 = 60 % slower)
  std::uint64_t slowest_behind = 0;  // steps behind the most advanced rank
  // How long ago the least recently advanced reporting rank advanced ("every rank advanced
  // within"); negative when no rank reports progress.
  double oldest_progress_age_s = -1;
};

struct Straggler {
  int rank = -1;  // -1: the whole machine
  int machine_rank = 0;
  std::string host;
  double work_time_s = 0;    // own work per step (a machine: its slowest rank's)
  double median_work_s = 0;  // the median rank's
  double slower = 0;         // work_time_s / median_work_s - 1
  double steps_per_s = 0;
  double window_s = 0;
  bool operator<(const Straggler& o) const {
    return std::make_pair(rank, machine_rank) < std::make_pair(o.rank, o.machine_rank);
  }
};

// Returns the job's summary.
JobSummary Summarize(const std::vector<RankStatus>& ranks);

// Returns the stragglers among the ranks measured over at least `min_window_s` (machines first,
// then ranks, by rank).
std::vector<Straggler> FindStragglers(const std::vector<RankStatus>& ranks, double threshold,
                                      double min_window_s);

class StragglerLog {
 public:
  explicit StragglerLog(double threshold) : threshold_(threshold) {}
  // Returns the stragglers in `ranks` not reported before (and forgets those that recovered).
  std::vector<Straggler> Update(const std::vector<RankStatus>& ranks, double min_window_s);
  // Returns the stragglers found by the last Update.
  const std::vector<Straggler>& current() const { return current_; }

 private:
  const double threshold_;
  std::set<std::pair<int, int>> reported_;  // (rank or -1, machine)
  std::vector<Straggler> current_;
};

// Returns "rank 3 (machine 1, host b) is a straggler: 0.042 s of own work per step, 62% more than
// the median rank's 0.026 s over the last 10.0 s (9.8 steps/s)", or "machine 1 (host b) is a
// straggler: every rank ...".
std::string DescribeStraggler(const Straggler& s);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_STATUS_JOB_SUMMARY_H_
