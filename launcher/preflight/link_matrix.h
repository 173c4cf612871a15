// The network preflight's results: every directed link between machines (bandwidth, round-trip
// latency) and the all-reduce of the job's bucket size, measured by accel-preflight
// (preflight_main.cc) through the job's transport; the text it hands to the agent; the slow
// links; and the matrix the agent prints. Pure types and functions.
//
// A link is slow when its bandwidth is below `threshold` times the median link's. When every link
// out of, or every link into, one machine is slow (and there are other links to compare with), the
// machine is named as the likely cause.
#ifndef ACCEL_LAUNCHER_PREFLIGHT_LINK_MATRIX_H_
#define ACCEL_LAUNCHER_PREFLIGHT_LINK_MATRIX_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace accel::launcher {

struct LinkMeasure {
  int from = 0;
  int to = 0;
  double bytes_per_s = 0;
  double rtt_s = 0;  // round trip of a one-byte message, median
};

struct PreflightResult {
  std::string transport;           // "gloo" or "nccl"
  std::vector<std::string> hosts;  // per machine: the address it was measured at
  std::vector<LinkMeasure> links;  // every ordered pair of machines
  std::int64_t allreduce_bytes = 0;
  double allreduce_s = 0;  // median of the timed all-reduces
};

struct SlowLink {
  int from = 0;
  int to = 0;
  double bytes_per_s = 0;
  double median_bytes_per_s = 0;
};

// Returns the ordered pairs (from, to) of `world` machines in the order every machine measures
// them.
std::vector<std::pair<int, int>> LinkOrder(int world);

// Text form, one record per line ("transport", "host", "link", "allreduce" lines).
std::string EncodePreflight(const PreflightResult& result);
std::optional<PreflightResult> DecodePreflight(absl::string_view text);

// Returns the links below `threshold` × the median link's bandwidth, slowest first.
std::vector<SlowLink> FindSlowLinks(const PreflightResult& result, double threshold);
// Returns the machines every outgoing or every incoming link of which is slow (3+ machines: with
// two there is one link each way and nothing to tell the ends apart).
std::vector<int> SlowMachines(const PreflightResult& result, const std::vector<SlowLink>& slow);

// Returns the report: the bandwidth and latency matrices (row: from, column: to), the all-reduce,
// and one line per slow link and slow machine.
std::string FormatPreflight(const PreflightResult& result, const std::vector<SlowLink>& slow,
                            double threshold);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_PREFLIGHT_LINK_MATRIX_H_
