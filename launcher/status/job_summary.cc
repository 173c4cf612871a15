#include "launcher/status/job_summary.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace accel::launcher {
namespace {

// Returns the lower median of `values` (not empty).
template <typename T>
T LowerMedian(std::vector<T> values) {
  std::sort(values.begin(), values.end());
  return values[(values.size() - 1) / 2];
}

// A rank is named only when its own work per step is also this much above the median's: below a
// millisecond, scheduling noise on a busy host moves a rank's own work by tens of percent, and a
// straggler that costs the job less than a millisecond per step is not worth a user's attention.
constexpr double kMinExcessSeconds = 0.001;

bool Measured(const RankStatus& r, double min_window_s) {
  return r.state != RankState::kExited && r.reports_progress && r.work_time_s > 0 &&
         r.window_s >= min_window_s;
}

}  // namespace

JobSummary Summarize(const std::vector<RankStatus>& ranks) {
  JobSummary s;
  s.ranks = static_cast<int>(ranks.size());
  std::vector<std::uint64_t> steps;
  std::vector<double> rates;
  std::vector<double> work;
  std::uint64_t max_step = 0;
  for (const RankStatus& r : ranks) {
    if (r.state == RankState::kExited) ++s.exited;
    if (r.state == RankState::kStopped) ++s.stopped;
    if (!r.reports_progress) {
      if (r.state != RankState::kExited) ++s.no_progress;
      continue;
    }
    ++s.reporting;
    steps.push_back(r.step);
    rates.push_back(r.steps_per_s);
    max_step = std::max(max_step, r.step);
    s.samples_per_s += r.samples_per_s;
    s.has_samples = s.has_samples || r.samples > 0;
    if (r.state != RankState::kExited) {
      s.oldest_progress_age_s = std::max(s.oldest_progress_age_s, r.progress_age_s);
    }
    if (Measured(r, 0)) work.push_back(r.work_time_s);
  }
  if (steps.empty()) return s;
  s.step = LowerMedian(steps);
  s.steps_per_s = LowerMedian(rates);
  if (work.empty()) return s;
  const double median = LowerMedian(work);
  for (const RankStatus& r : ranks) {
    if (!Measured(r, 0)) continue;
    if (!s.slowest_rank.has_value() || r.work_time_s > s.slowest_slower) {
      s.slowest_rank = r.rank;
      s.slowest_machine = r.machine_rank;
      s.slowest_slower = r.work_time_s;  // the ratio is taken below
      s.slowest_behind = max_step - r.step;
    }
  }
  s.slowest_slower = median > 0 ? s.slowest_slower / median - 1 : 0;
  return s;
}

std::vector<Straggler> FindStragglers(const std::vector<RankStatus>& ranks, double threshold,
                                      double min_window_s) {
  std::vector<double> work;
  for (const RankStatus& r : ranks) {
    if (Measured(r, min_window_s)) work.push_back(r.work_time_s);
  }
  if (work.size() < 2) return {};
  const double median = LowerMedian(work);
  std::vector<Straggler> slow_ranks;
  std::map<int, std::pair<int, int>> per_machine;  // machine → (ranks, stragglers)
  for (const RankStatus& r : ranks) {
    if (r.state == RankState::kExited) continue;
    ++per_machine[r.machine_rank].first;
    if (!Measured(r, min_window_s) || r.work_time_s <= (1 + threshold) * median ||
        r.work_time_s - median < kMinExcessSeconds) {
      continue;
    }
    ++per_machine[r.machine_rank].second;
    slow_ranks.push_back(Straggler{r.rank, r.machine_rank, r.host, r.work_time_s, median,
                                   r.work_time_s / median - 1, r.steps_per_s, r.window_s});
  }
  std::vector<Straggler> out;
  for (const auto& [machine, counts] : per_machine) {
    if (counts.first < 2 || counts.second < counts.first) continue;
    Straggler m;
    for (const Straggler& s : slow_ranks) {
      if (s.machine_rank != machine || s.work_time_s <= m.work_time_s) continue;
      m = s;
    }
    m.rank = -1;
    out.push_back(m);
  }
  for (const Straggler& s : slow_ranks) {
    if (per_machine[s.machine_rank].first < 2 ||
        per_machine[s.machine_rank].second < per_machine[s.machine_rank].first) {
      out.push_back(s);
    }
  }
  return out;
}

std::vector<Straggler> StragglerLog::Update(const std::vector<RankStatus>& ranks,
                                            double min_window_s) {
  current_ = FindStragglers(ranks, threshold_, min_window_s);
  // Forget those that recovered: measured again, and within half the threshold of the median.
  std::vector<Straggler> loose = FindStragglers(ranks, threshold_ / 2, min_window_s);
  std::set<std::pair<int, int>> still;
  for (const Straggler& s : loose) still.emplace(s.rank, s.machine_rank);
  for (const RankStatus& r : ranks) {
    if (r.work_time_s <= 0) {
      still.emplace(r.rank, r.machine_rank);  // not measured: no news
      still.emplace(-1, r.machine_rank);
    }
  }
  for (auto it = reported_.begin(); it != reported_.end();) {
    it = still.count(*it) != 0 ? std::next(it) : reported_.erase(it);
  }
  std::vector<Straggler> fresh;
  for (const Straggler& s : current_) {
    if (reported_.emplace(s.rank, s.machine_rank).second) fresh.push_back(s);
  }
  return fresh;
}

std::string DescribeStraggler(const Straggler& s) {
  const std::string who =
      s.rank >= 0
          ? absl::StrCat("rank ", s.rank, " (machine ", s.machine_rank, ", host ", s.host, ")")
          : absl::StrCat("machine ", s.machine_rank, " (host ", s.host, ")");
  const std::string what = s.rank >= 0 ? "" : "every rank is slow; the slowest does ";
  return absl::StrFormat(
      "%s is a straggler: %s%.4f s of own work per step, %.0f%% more than the median rank's "
      "%.4f s over the last %.1f s (%.2f steps/s)",
      who, what, s.work_time_s, 100 * s.slower, s.median_work_s, s.window_s, s.steps_per_s);
}

}  // namespace accel::launcher
