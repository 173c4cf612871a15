#include "launcher/process/hang_verdict.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace accel::launcher {
namespace {

bool HasCollectives(const RankSnapshot& r) {
  return r.progress.has_value() && r.progress->has_collectives;
}

std::string Name(const RankSnapshot& r) {
  return absl::StrCat("rank ", r.rank, " (machine ", r.machine_rank, ")");
}

// Returns the line describing `r`, which is not the root cause.
std::string DescribeOther(const RankSnapshot& r) {
  if (r.stopped) return absl::StrCat(Name(r), ": also stopped");
  if (HasCollectives(r) && r.progress->in_collective()) {
    return absl::StrCat(Name(r), ": waiting in collective ", r.progress->collectives_started,
                        " (step ", r.progress->step, ")");
  }
  if (r.progress.has_value()) {
    return absl::StrCat(Name(r), ": at step ", r.progress->step, ", outside collectives, idle for ",
                        FormatSeconds(r.idle_for));
  }
  return absl::StrCat(Name(r), ": idle for ", FormatSeconds(r.idle_for));
}

// Returns the index of the stopped rank that went idle first, or -1.
int PickStopped(const std::vector<RankSnapshot>& ranks) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(ranks.size()); ++i) {
    if (!ranks[i].stopped) continue;
    if (best < 0 || ranks[i].idle_for > ranks[best].idle_for) best = i;
  }
  return best;
}

// Returns the index of the rank furthest behind in collectives (rule 2), or -1 when the counts
// do not single one out; `reached` receives the collective the leaders are in.
int PickBehind(const std::vector<RankSnapshot>& ranks, std::uint64_t* reached) {
  std::uint64_t most = 0;
  for (const RankSnapshot& r : ranks) {
    if (HasCollectives(r)) most = std::max(most, r.progress->collectives_started);
  }
  *reached = most;
  int best = -1;
  auto key = [&ranks](int i) {
    const progress::Record& p = *ranks[i].progress;
    return std::make_tuple(p.in_collective(), p.collectives_started, -ranks[i].idle_for);
  };
  for (int i = 0; i < static_cast<int>(ranks.size()); ++i) {
    if (!HasCollectives(ranks[i]) || ranks[i].progress->collectives_started >= most) continue;
    if (best < 0 || key(i) < key(best)) best = i;
  }
  return best;
}

std::string BehindWhy(const RankSnapshot& r, std::uint64_t reached) {
  const progress::Record& p = *r.progress;
  return absl::StrCat(
      "did not reach collective ", reached, " (it ",
      p.in_collective()
          ? absl::StrCat("is still in collective ", p.collectives_started)
          : absl::StrCat("completed collective ", p.collectives_done, " and started no other"),
      ", at step ", p.step, ")");
}

std::string Clean(absl::string_view text) {
  std::string out(text);
  std::replace(out.begin(), out.end(), '\t', ' ');
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

}  // namespace

bool StalledInCollective(const std::vector<RankSnapshot>& ranks) {
  if (ranks.empty() || !std::all_of(ranks.begin(), ranks.end(), HasCollectives)) return false;
  std::uint64_t reached = 0;
  if (PickBehind(ranks, &reached) < 0) return false;
  return std::any_of(ranks.begin(), ranks.end(), [reached](const RankSnapshot& r) {
    return r.progress->in_collective() && r.progress->collectives_started == reached;
  });
}

std::string FormatSeconds(absl::Duration d) {
  return absl::StrFormat("%.1f s", absl::ToDoubleSeconds(d));
}

HangVerdict DiagnoseHang(const std::vector<RankSnapshot>& input, absl::Duration job_idle_for,
                         bool busy) {
  std::vector<RankSnapshot> ranks = input;
  std::sort(ranks.begin(), ranks.end(),
            [](const RankSnapshot& a, const RankSnapshot& b) { return a.rank < b.rank; });
  HangVerdict verdict;
  verdict.job_idle_for = job_idle_for;
  std::uint64_t reached = 0;
  int root = PickStopped(ranks);
  if (root >= 0) {
    verdict.why = "is stopped (process state T: SIGSTOP or a debugger)";
    verdict.stopped = true;
  } else if ((root = PickBehind(ranks, &reached)) >= 0) {
    verdict.why = BehindWhy(ranks[root], reached);
    verdict.busy = busy;
  } else {
    for (int i = 0; i < static_cast<int>(ranks.size()); ++i) {
      if (root < 0 || ranks[i].idle_for > ranks[root].idle_for) root = i;
    }
    if (root < 0) return verdict;
    verdict.inferred = true;
    const RankSnapshot& r = ranks[root];
    verdict.why = absl::StrCat(
        "went idle first (no CPU time or output for ", FormatSeconds(r.idle_for), "; ",
        HasCollectives(r) && r.progress->in_collective()
            ? absl::StrCat("every rank waits in collective ", r.progress->collectives_started)
            : std::string("the program reports no progress"),
        ", so this is inferred)");
  }
  const RankSnapshot& r = ranks[root];
  verdict.rank = r.rank;
  verdict.machine_rank = r.machine_rank;
  verdict.host = r.host;
  for (int i = 0; i < static_cast<int>(ranks.size()); ++i) {
    if (i != root) verdict.others.push_back(DescribeOther(ranks[i]));
  }
  return verdict;
}

HangVerdict DecideJobVerdict(const std::map<int, std::vector<RankSnapshot>>& reports,
                             const std::vector<RankSnapshot>& last_read,
                             absl::Duration job_idle_for, bool busy) {
  std::map<int, RankSnapshot> ranks;  // by rank: one snapshot each
  for (const auto& [machine, reported] : reports) {
    for (const RankSnapshot& r : reported) ranks.insert_or_assign(r.rank, r);
  }
  for (const RankSnapshot& r : last_read) {
    if (reports.count(r.machine_rank) == 0) ranks.emplace(r.rank, r);
  }
  std::vector<RankSnapshot> all;
  all.reserve(ranks.size());
  for (auto& [rank, r] : ranks) all.push_back(std::move(r));
  return DiagnoseHang(all, job_idle_for, busy);
}

std::string DescribeVerdict(const HangVerdict& v) {
  const char* since = v.inferred ? "; no rank used CPU or wrote output for "
                      : v.busy   ? "; it kept running, but no rank advanced for "
                                 : "; no rank advanced, used CPU or wrote output for ";
  return absl::StrCat(v.inferred ? "hang (inferred): " : "hang: ", "rank ", v.rank, " (machine ",
                      v.machine_rank, ") ", v.why, since, FormatSeconds(v.job_idle_for));
}

std::string EncodeSnapshots(const std::vector<RankSnapshot>& ranks) {
  std::string out;
  for (const RankSnapshot& r : ranks) {
    const progress::Record p = r.progress.value_or(progress::Record{});
    absl::StrAppend(&out, r.rank, "\t", r.machine_rank, "\t", Clean(r.host), "\t",
                    r.progress.has_value() ? 1 : 0, "\t", p.has_collectives ? 1 : 0, "\t", p.step,
                    "\t", p.collectives_started, "\t", p.collectives_done, "\t", r.stopped ? 1 : 0,
                    "\t", absl::ToInt64Milliseconds(r.idle_for), "\t",
                    absl::ToInt64Milliseconds(r.stalled_for), "\n");
  }
  return out;
}

std::optional<std::vector<RankSnapshot>> DecodeSnapshots(absl::string_view text) {
  std::vector<RankSnapshot> ranks;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, '\t');
    if (f.size() != 11) return std::nullopt;
    RankSnapshot r;
    int has_progress = 0, has_collectives = 0, stopped = 0;
    progress::Record p;
    std::int64_t idle_ms = 0, stalled_ms = 0;
    if (!absl::SimpleAtoi(f[0], &r.rank) || !absl::SimpleAtoi(f[1], &r.machine_rank) ||
        !absl::SimpleAtoi(f[3], &has_progress) || !absl::SimpleAtoi(f[4], &has_collectives) ||
        !absl::SimpleAtoi(f[5], &p.step) || !absl::SimpleAtoi(f[6], &p.collectives_started) ||
        !absl::SimpleAtoi(f[7], &p.collectives_done) || !absl::SimpleAtoi(f[8], &stopped) ||
        !absl::SimpleAtoi(f[9], &idle_ms) || !absl::SimpleAtoi(f[10], &stalled_ms)) {
      return std::nullopt;
    }
    r.host = std::string(f[2]);
    p.has_collectives = has_collectives != 0;
    if (has_progress != 0) r.progress = p;
    r.stopped = stopped != 0;
    r.idle_for = absl::Milliseconds(idle_ms);
    r.stalled_for = absl::Milliseconds(stalled_ms);
    ranks.push_back(std::move(r));
  }
  return ranks;
}

std::string EncodeVerdict(const HangVerdict& v) {
  std::string out =
      absl::StrCat(v.rank, "\t", v.machine_rank, "\t", Clean(v.host), "\t", v.inferred ? 1 : 0,
                   "\t", absl::ToInt64Milliseconds(v.job_idle_for), "\t", v.busy ? 1 : 0, "\t",
                   v.stopped ? 1 : 0, "\n", Clean(v.why), "\n");
  for (const std::string& other : v.others) absl::StrAppend(&out, Clean(other), "\n");
  return out;
}

std::optional<HangVerdict> DecodeVerdict(absl::string_view text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  if (lines.size() < 2) return std::nullopt;
  std::vector<absl::string_view> f = absl::StrSplit(lines[0], '\t');
  HangVerdict v;
  int inferred = 0, busy = 0, stopped = 0;
  std::int64_t idle_ms = 0;
  if (f.size() != 7 || !absl::SimpleAtoi(f[0], &v.rank) ||
      !absl::SimpleAtoi(f[1], &v.machine_rank) || !absl::SimpleAtoi(f[3], &inferred) ||
      !absl::SimpleAtoi(f[4], &idle_ms) || !absl::SimpleAtoi(f[5], &busy) ||
      !absl::SimpleAtoi(f[6], &stopped)) {
    return std::nullopt;
  }
  v.host = std::string(f[2]);
  v.inferred = inferred != 0;
  v.busy = busy != 0;
  v.stopped = stopped != 0;
  v.job_idle_for = absl::Milliseconds(idle_ms);
  v.why = std::string(lines[1]);
  for (std::size_t i = 2; i < lines.size(); ++i) v.others.emplace_back(lines[i]);
  return v;
}

}  // namespace accel::launcher
