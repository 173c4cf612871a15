#include "launcher/status/status_format.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/json.h"

namespace accel::launcher {
namespace {

std::string Rate(double per_s) {
  return per_s >= 100 ? absl::StrFormat("%.0f", per_s) : absl::StrFormat("%.2f", per_s);
}

std::string StragglerNames(const std::vector<Straggler>& stragglers) {
  std::vector<std::string> names;
  for (const Straggler& s : stragglers) {
    names.push_back(s.rank >= 0 ? absl::StrCat("rank ", s.rank)
                                : absl::StrCat("machine ", s.machine_rank));
  }
  return absl::StrJoin(names, ", ");
}

std::string Number(double value) { return absl::StrFormat("%.6g", value); }

std::string RankJson(const RankStatus& r) {
  return absl::StrCat(
      "{\"rank\": ", r.rank, ", \"machine\": ", r.machine_rank, ", \"host\": ", JsonQuote(r.host),
      ", \"local_rank\": ", r.local_rank, ", \"pid\": ", r.pid,
      ", \"state\": ", JsonQuote(StateName(r.state)),
      ", \"description\": ", JsonQuote(DescribeState(r)),
      ", \"reports_progress\": ", r.reports_progress ? "true" : "false", ", \"step\": ", r.step,
      ", \"samples\": ", r.samples, ", \"steps_per_s\": ", Number(r.steps_per_s),
      ", \"samples_per_s\": ", Number(r.samples_per_s),
      ", \"step_time_s\": ", Number(r.step_time_s), ", \"work_time_s\": ", Number(r.work_time_s),
      ", \"window_s\": ", Number(r.window_s),
      ", \"last_progress_age_s\": ", Number(r.progress_age_s), ", \"exit_code\": ",
      r.state == RankState::kExited && r.exit_signal == 0 ? absl::StrCat(r.exit_code) : "null",
      ", \"exit_signal\": ",
      r.state == RankState::kExited && r.exit_signal != 0 ? absl::StrCat(r.exit_signal) : "null",
      "}");
}

std::string StragglerJson(const Straggler& s) {
  return absl::StrCat(
      "{\"rank\": ", s.rank >= 0 ? absl::StrCat(s.rank) : "null", ", \"machine\": ", s.machine_rank,
      ", \"host\": ", JsonQuote(s.host), ", \"work_time_s\": ", Number(s.work_time_s),
      ", \"median_work_time_s\": ", Number(s.median_work_s), ", \"slower\": ", Number(s.slower),
      ", \"steps_per_s\": ", Number(s.steps_per_s), ", \"window_s\": ", Number(s.window_s),
      ", \"description\": ", JsonQuote(DescribeStraggler(s)), "}");
}

std::string SummaryJson(const JobSummary& s) {
  return absl::StrCat(
      "{\"ranks\": ", s.ranks, ", \"reporting\": ", s.reporting,
      ", \"no_progress\": ", s.no_progress, ", \"stopped\": ", s.stopped,
      ", \"exited\": ", s.exited, ", \"step\": ", s.step,
      ", \"steps_per_s\": ", Number(s.steps_per_s),
      ", \"samples_per_s\": ", s.has_samples ? Number(s.samples_per_s) : "null",
      ", \"slowest_rank\": ", s.slowest_rank.has_value() ? absl::StrCat(*s.slowest_rank) : "null",
      ", \"slowest_slower\": ", s.slowest_rank.has_value() ? Number(s.slowest_slower) : "null",
      ", \"slowest_steps_behind\": ",
      s.slowest_rank.has_value() ? absl::StrCat(s.slowest_behind) : "null",
      ", \"every_rank_advanced_within_s\": ",
      s.oldest_progress_age_s >= 0 ? Number(s.oldest_progress_age_s) : "null", "}");
}

}  // namespace

std::string FormatStatusLine(const JobSummary& s, const std::vector<Straggler>& stragglers) {
  std::vector<std::string> parts;
  if (s.reporting == 0) {
    parts.push_back(absl::StrCat(s.ranks - s.exited, " ranks, no progress reported"));
  } else {
    parts.push_back(absl::StrCat("step ", s.step));
    parts.push_back(s.has_samples ? absl::StrCat(Rate(s.samples_per_s), " samples/s")
                                  : absl::StrCat(Rate(s.steps_per_s), " steps/s"));
    if (s.slowest_rank.has_value()) {
      parts.push_back(absl::StrFormat(
          "slowest rank %d (machine %d): %.0f%% more work per step, %d steps behind",
          *s.slowest_rank, s.slowest_machine, 100 * s.slowest_slower,
          static_cast<long long>(s.slowest_behind)));
    }
    parts.push_back(absl::StrFormat("every rank advanced within %.1f s", s.oldest_progress_age_s));
    if (s.no_progress > 0) {
      parts.push_back(absl::StrCat(s.no_progress, " ranks: no progress reported"));
    }
  }
  if (s.stopped > 0) parts.push_back(absl::StrCat(s.stopped, " stopped"));
  if (s.exited > 0) parts.push_back(absl::StrCat(s.exited, " exited"));
  if (!stragglers.empty()) parts.push_back(absl::StrCat("straggler: ", StragglerNames(stragglers)));
  return absl::StrJoin(parts, " | ");
}

std::string FormatStatusTable(const JobView& job, const std::vector<Straggler>& stragglers) {
  // The attempt is the rendezvous generation (elastic membership: docs/config.md).
  std::string out = absl::StrFormat("run %s, generation %d, %d machines, %d ranks\n", job.run_id,
                                    job.attempt, job.num_machines, job.world_size);
  absl::StrAppend(&out, absl::StrFormat("%-5s %-7s %-16s %-5s %-8s %8s %9s %9s %10s %8s  %s\n",
                                        "RANK", "MACHINE", "HOST", "LOCAL", "PID", "STEP",
                                        "STEPS/S", "SAMPLES/S", "WORK/STEP", "PROGRESS", "STATE"));
  for (const RankStatus& r : job.ranks) {
    const bool pace = r.reports_progress && r.window_s > 0;
    absl::StrAppend(
        &out, absl::StrFormat("%-5d %-7d %-16s %-5d %-8d %8s %9s %9s %10s %8s  %s\n", r.rank,
                              r.machine_rank, r.host.substr(0, 16), r.local_rank, r.pid,
                              r.reports_progress ? absl::StrCat(r.step) : "-",
                              pace ? Rate(r.steps_per_s) : "-",
                              pace && r.samples > 0 ? Rate(r.samples_per_s) : "-",
                              r.work_time_s > 0 ? absl::StrFormat("%.4f s", r.work_time_s) : "-",
                              absl::StrFormat("%.1f s", r.progress_age_s), DescribeState(r)));
  }
  for (int machine : job.silent_machines) {
    absl::StrAppend(&out, "machine ", machine, ": no status published (yet)\n");
  }
  absl::StrAppend(&out, FormatStatusLine(Summarize(job.ranks), stragglers), "\n");
  for (const Straggler& s : stragglers) absl::StrAppend(&out, DescribeStraggler(s), "\n");
  return out;
}

std::string FormatStatusJson(const JobView& job, const std::vector<Straggler>& stragglers) {
  std::vector<std::string> ranks;
  for (const RankStatus& r : job.ranks) ranks.push_back(RankJson(r));
  std::vector<std::string> slow;
  for (const Straggler& s : stragglers) slow.push_back(StragglerJson(s));
  return absl::StrCat("{\"run_id\": ", JsonQuote(job.run_id), ", \"attempt\": ", job.attempt,
                      ", \"generation\": ", job.attempt, ", \"num_machines\": ", job.num_machines,
                      ", \"world_size\": ", job.world_size, ", \"silent_machines\": [",
                      absl::StrJoin(job.silent_machines, ", "),
                      "], \"summary\": ", SummaryJson(Summarize(job.ranks)), ", \"stragglers\": [",
                      absl::StrJoin(slow, ", "), "], \"ranks\": [", absl::StrJoin(ranks, ", "),
                      "]}\n");
}

}  // namespace accel::launcher
