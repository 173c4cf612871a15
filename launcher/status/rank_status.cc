#include "launcher/status/rank_status.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "launcher/process/subprocess.h"

namespace accel::launcher {
namespace {

constexpr char kMagic[] = "accel-status 1";
constexpr std::size_t kRankFields = 21;

// Returns `text` with tabs and line breaks replaced, so it fits one field.
std::string Clean(absl::string_view text) {
  std::string out(text);
  std::replace_if(
      out.begin(), out.end(), [](char c) { return c == '\t' || c == '\n' || c == '\r'; }, ' ');
  return out;
}

std::string EncodeRank(const RankStatus& r) {
  return absl::StrCat(
      absl::StrCat(r.rank, "\t", r.machine_rank, "\t", r.local_rank, "\t", Clean(r.host), "\t",
                   r.pid, "\t", static_cast<int>(r.state), "\t", r.reports_progress ? 1 : 0, "\t"),
      absl::StrCat(r.step, "\t", r.samples, "\t", r.collective, "\t", r.window_s, "\t",
                   r.steps_per_s, "\t", r.samples_per_s, "\t", r.step_time_s, "\t"),
      absl::StrCat(r.work_time_s, "\t", r.interval_s, "\t", r.interval_work_s, "\t",
                   r.interval_steps, "\t", r.progress_age_s, "\t", r.exit_code, "\t", r.exit_signal,
                   "\n"));
}

std::optional<RankStatus> DecodeRank(absl::string_view line) {
  std::vector<absl::string_view> f = absl::StrSplit(line, '\t');
  if (f.size() != kRankFields) return std::nullopt;
  RankStatus r;
  int state = 0, reports = 0;
  const bool ok =
      absl::SimpleAtoi(f[0], &r.rank) && absl::SimpleAtoi(f[1], &r.machine_rank) &&
      absl::SimpleAtoi(f[2], &r.local_rank) && absl::SimpleAtoi(f[4], &r.pid) &&
      absl::SimpleAtoi(f[5], &state) && absl::SimpleAtoi(f[6], &reports) &&
      absl::SimpleAtoi(f[7], &r.step) && absl::SimpleAtoi(f[8], &r.samples) &&
      absl::SimpleAtoi(f[9], &r.collective) && absl::SimpleAtod(f[10], &r.window_s) &&
      absl::SimpleAtod(f[11], &r.steps_per_s) && absl::SimpleAtod(f[12], &r.samples_per_s) &&
      absl::SimpleAtod(f[13], &r.step_time_s) && absl::SimpleAtod(f[14], &r.work_time_s) &&
      absl::SimpleAtod(f[15], &r.interval_s) && absl::SimpleAtod(f[16], &r.interval_work_s) &&
      absl::SimpleAtoi(f[17], &r.interval_steps) && absl::SimpleAtod(f[18], &r.progress_age_s) &&
      absl::SimpleAtoi(f[19], &r.exit_code) && absl::SimpleAtoi(f[20], &r.exit_signal);
  if (!ok || state < 0 || state > static_cast<int>(RankState::kExited)) return std::nullopt;
  r.host = std::string(f[3]);
  r.state = static_cast<RankState>(state);
  r.reports_progress = reports != 0;
  return r;
}

}  // namespace

const char* StateName(RankState state) {
  switch (state) {
    case RankState::kStarting:
      return "starting";
    case RankState::kRunning:
      return "running";
    case RankState::kWaiting:
      return "waiting";
    case RankState::kStopped:
      return "stopped";
    case RankState::kExited:
      return "exited";
  }
  return "unknown";
}

std::string DescribeState(const RankStatus& r) {
  switch (r.state) {
    case RankState::kWaiting:
      return absl::StrCat("waiting in collective ", r.collective);
    case RankState::kExited:
      return r.exit_signal != 0
                 ? absl::StrCat("killed by ", DescribeExit(ExitStatus{0, r.exit_signal}))
                 : absl::StrCat("exited with code ", r.exit_code);
    case RankState::kStarting:
    case RankState::kRunning:
      if (!r.reports_progress && r.state == RankState::kRunning) return "no progress reported";
      return StateName(r.state);
    case RankState::kStopped:
      return StateName(r.state);
  }
  return StateName(r.state);
}

std::string EncodeMachineStatus(const MachineStatus& machine) {
  std::string out = absl::StrCat(kMagic, "\t", machine.machine_rank, "\t", machine.attempt, "\t",
                                 machine.seq, "\n");
  for (const RankStatus& r : machine.ranks) out += EncodeRank(r);
  return out;
}

std::optional<MachineStatus> DecodeMachineStatus(absl::string_view text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  if (lines.empty()) return std::nullopt;
  std::vector<absl::string_view> head = absl::StrSplit(lines[0], '\t');
  MachineStatus machine;
  if (head.size() != 4 || head[0] != kMagic || !absl::SimpleAtoi(head[1], &machine.machine_rank) ||
      !absl::SimpleAtoi(head[2], &machine.attempt) || !absl::SimpleAtoi(head[3], &machine.seq)) {
    return std::nullopt;
  }
  for (std::size_t i = 1; i < lines.size(); ++i) {
    std::optional<RankStatus> rank = DecodeRank(lines[i]);
    if (!rank.has_value()) return std::nullopt;
    machine.ranks.push_back(*std::move(rank));
  }
  return machine;
}

}  // namespace accel::launcher
