// How the job's status reads: machine 0's one-line summary, `accel-launch status`'s table and
// its JSON. Pure functions.
#ifndef ACCEL_LAUNCHER_STATUS_STATUS_FORMAT_H_
#define ACCEL_LAUNCHER_STATUS_STATUS_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "launcher/status/job_summary.h"
#include "launcher/status/rank_status.h"

namespace accel::launcher {

// Where the job is: its identity and the ranks of every machine that published.
struct JobView {
  std::string run_id;
  std::int64_t attempt = 0;
  int num_machines = 0;
  int world_size = 0;
  std::vector<int> silent_machines;  // machines whose ranks could not be read (GROUP_RANK)
  std::vector<RankStatus> ranks;     // ordered by rank
};

// Returns the status line, e.g. "step 1520 | 3410 samples/s | slowest rank 3 (machine 1): 62%
// more work per step, 0 steps behind | every rank advanced within 0.3 s | straggler: rank 3".
std::string FormatStatusLine(const JobSummary& summary, const std::vector<Straggler>& stragglers);

// Returns the table: a heading line, then one row per rank, then the stragglers.
std::string FormatStatusTable(const JobView& job, const std::vector<Straggler>& stragglers);

// Returns the job as one JSON object (keys: run_id, attempt, num_machines, world_size,
// silent_machines, summary, stragglers, ranks).
std::string FormatStatusJson(const JobView& job, const std::vector<Straggler>& stragglers);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_STATUS_STATUS_FORMAT_H_
