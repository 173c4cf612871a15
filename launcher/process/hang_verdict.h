// Hang diagnosis: given every rank of the job as hang detection sees it (on this machine, or on
// another through the rendezvous store), name the rank the others wait on.
//
// The evidence, strongest first:
//   1. a stopped process (state T: SIGSTOP or a debugger) is the root cause;
//   2. libaccel's collective counts (common/progress_record.h): every rank issues collectives in
//      the same order, so a rank that never started the collective the others are in is the one
//      they wait on; the ranks inside it are "waiting";
//      (a hang found by StalledInCollective, with that rank still using CPU, says it kept running);
//   3. otherwise (programs that report no progress, or every rank inside the same collective) the
//      rank that went idle first — no CPU time, no output — is the likely cause, and the verdict
//      says it is inferred.
// Pure functions; the encodings are what agents exchange through the store.
#ifndef ACCEL_LAUNCHER_PROCESS_HANG_VERDICT_H_
#define ACCEL_LAUNCHER_PROCESS_HANG_VERDICT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/progress_record.h"

namespace accel::launcher {

// One rank as hang detection sees it.
struct RankSnapshot {
  int rank = 0;
  int machine_rank = 0;
  std::string host;
  std::optional<progress::Record> progress;  // nullopt: the program writes no progress file
  bool stopped = false;                      // a process of it is stopped (state T or t)
  absl::Duration idle_for;                   // since it last advanced, used CPU or wrote output
  absl::Duration stalled_for;  // since its progress record moved or it read or wrote any bytes
};

struct HangVerdict {
  int rank = -1;  // the root cause
  int machine_rank = -1;
  std::string host;
  bool inferred = false;  // named from idle times alone
  bool busy = false;      // found by StalledInCollective: the job used CPU, but no rank advanced
  bool stopped = false;   // the root cause was seen stopped (process state T)
  std::string why;        // e.g. "is stopped (process state T: SIGSTOP or a debugger)"
  std::vector<std::string> others;  // one line per other rank, e.g. "rank 1: waiting in ..."
  absl::Duration job_idle_for;      // how long no rank had advanced, used CPU or written output
                                    // (busy: how long no rank had advanced)
};

// Returns true when `ranks` (every rank of the job) show a hang by their collective counts alone:
// every rank reports them, some rank is inside the latest collective any rank started, and some
// rank never started it. Hang detection applies it once no rank advanced for the hang timeout,
// even while a rank uses CPU (spinning in a loop while the others wait).
bool StalledInCollective(const std::vector<RankSnapshot>& ranks);

// Returns the verdict for `ranks` (not empty) after the job was idle for `job_idle_for` (or, with
// `busy`, stalled in a collective for that long while a rank kept using CPU).
HangVerdict DiagnoseHang(const std::vector<RankSnapshot>& ranks, absl::Duration job_idle_for,
                         bool busy = false);

// Returns the job's verdict from every machine's ranks: `reports` (machine rank → its ranks as that
// machine sampled them once a machine found the job hung) and, for the machines without a report,
// `last_read` (their ranks as last read from the store; entries of reported machines are ignored).
// A pure function of its arguments, so every machine that decides on the same reports names the
// same rank, and an observation made on one machine (a stopped process) beats an inference made
// on another from stale or missing data (issue 25).
HangVerdict DecideJobVerdict(const std::map<int, std::vector<RankSnapshot>>& reports,
                             const std::vector<RankSnapshot>& last_read,
                             absl::Duration job_idle_for, bool busy);

// Returns the one-line description used as the root cause's detail (the other ranks' lines are
// printed apart), e.g. "hang: rank 3 (machine 1) is stopped (process state T: SIGSTOP or a
// debugger); no rank advanced, used CPU or wrote output for 5.0 s".
std::string DescribeVerdict(const HangVerdict& verdict);

// Returns `d` as seconds with one decimal, "3.0 s".
std::string FormatSeconds(absl::Duration d);

// Text encodings for the rendezvous store (one line per rank; fields tab-separated).
std::string EncodeSnapshots(const std::vector<RankSnapshot>& ranks);
std::optional<std::vector<RankSnapshot>> DecodeSnapshots(absl::string_view text);
std::string EncodeVerdict(const HangVerdict& verdict);
std::optional<HangVerdict> DecodeVerdict(absl::string_view text);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_PROCESS_HANG_VERDICT_H_
