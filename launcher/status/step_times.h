// The step-time log: machine 0 appends every rank's own work per step over each status interval
// to <log_dir>/<run_id>/step_times.csv, and `accel-launch report` turns that file into a heat map
// (ranks × time, gnuplot) in which a straggler is the bright row.
//
// The CSV's columns: time_s (seconds since the status started on machine 0), rank, machine, step,
// steps (steps taken in the interval), work_s (own work per step in the interval: wall time
// minus time in collectives, divided by the steps, or the interval's own work when no step ended
// in it, so a stopped rank is bright), interval_s.
#ifndef ACCEL_LAUNCHER_STATUS_STEP_TIMES_H_
#define ACCEL_LAUNCHER_STATUS_STEP_TIMES_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/unique_fd.h"
#include "launcher/status/rank_status.h"

namespace accel::launcher {

inline constexpr char kStepTimesFile[] = "step_times.csv";

struct StepTimeRow {
  double time_s = 0;
  int rank = 0;
  int machine_rank = 0;
  std::uint64_t step = 0;
  std::uint64_t steps = 0;
  double work_s = 0;
  double interval_s = 0;
};

// Appends rows to a CSV file (the header first when it is new). Not thread-safe.
class StepTimesWriter {
 public:
  // Opens `path` for appending, created with `mode` (log_mode) when missing; an existing one
  // must be a regular file of this user in a directory of this user's (common/safe_file.h).
  // Errors name the file.
  static absl::StatusOr<StepTimesWriter> Open(const std::string& path, mode_t mode = 0600);
  // Appends one row per rank of `ranks` measured over an interval, at `time_s`.
  absl::Status Append(double time_s, const std::vector<RankStatus>& ranks);

 private:
  explicit StepTimesWriter(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

// Returns the rows of a step-time CSV; INVALID_ARGUMENT names the first bad line.
absl::StatusOr<std::vector<StepTimeRow>> ParseStepTimes(const std::string& text);

// The heat map's grid: one row per rank (ranks in order), one column per time bin of
// `bin_s`; a cell is the rank's work_s in that bin (the last row that fell in it, else the
// rank's previous cell, else 0).
struct HeatMap {
  std::vector<int> ranks;
  double bin_s = 1;
  std::vector<std::vector<double>> cells;  // [rank index][bin]
};

// Returns the grid of `rows` (bin: the median interval_s, at least 0.1 s).
HeatMap MakeHeatMap(const std::vector<StepTimeRow>& rows);

// Returns the rank whose median cell, from its first cell with work on, is the largest (-1 for
// an empty map).
int HottestRank(const HeatMap& map);

// Returns the data file for gnuplot: "time rank value" triples, a blank line between time bins.
std::string HeatMapData(const HeatMap& map);

// Returns the gnuplot script that draws `data_path` into `png_path`, titled `title`.
std::string HeatMapScript(const HeatMap& map, const std::string& data_path,
                          const std::string& png_path, const std::string& title);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_STATUS_STEP_TIMES_H_
