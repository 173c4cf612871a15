// RankStatus: one rank of the job as its machine last saw it — who it is, where it is, what it is
// doing and how fast it went over the status window — and the text encoding in which every
// machine publishes its ranks to the rendezvous store (launcher/agent/status_exchange), read back
// by machine 0's status line and by `accel-launch status` on any machine.
//
// Pace: a rank's "work time" per step is the wall time per step minus the time it had a
// collective in flight (common/progress_record.h). In data-parallel training every rank steps at
// the pace of the slowest, so step times are alike; the rank the others wait for is the one whose
// own work takes longest, and that is what straggler detection compares. Pure types and
// functions.
#ifndef ACCEL_LAUNCHER_STATUS_RANK_STATUS_H_
#define ACCEL_LAUNCHER_STATUS_RANK_STATUS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace accel::launcher {

enum class RankState {
  kStarting,  // spawned; no progress record yet (a program that never writes one stays here)
  kRunning,
  kWaiting,  // inside a collective that has not completed for a while
  kStopped,  // a process of it is stopped (SIGSTOP, a debugger)
  kExited,
};

struct RankStatus {
  int rank = 0;
  int machine_rank = 0;
  int local_rank = 0;
  std::string host;
  int pid = 0;
  RankState state = RankState::kStarting;
  bool reports_progress = false;  // a progress record was read (libaccel workers)
  std::uint64_t step = 0;
  std::uint64_t samples = 0;
  std::uint64_t collective = 0;  // collectives started: the one it waits in when kWaiting
  // Over the window (window_s of history; 0 = not measured yet).
  double window_s = 0;
  double steps_per_s = 0;
  double samples_per_s = 0;
  double step_time_s = 0;  // wall time per step; 0 = no step in the window
  double work_time_s = 0;  // step time minus time in collectives; 0 = no step in the window
  // Over the last sample interval, for the step-time CSV: own work per step (the interval's own
  // work when no step ended in it, so a stopped rank shows as slow) and the steps it took.
  double interval_s = 0;
  double interval_work_s = 0;
  std::uint64_t interval_steps = 0;
  double progress_age_s = 0;  // since the progress record last changed (or since it started)
  int exit_code = 0;          // kExited
  int exit_signal = 0;        // kExited by a signal
};

// One machine's publication: its ranks, numbered so that readers can tell a new sample from one
// already seen.
struct MachineStatus {
  int machine_rank = 0;
  std::int64_t attempt = 0;
  std::uint64_t seq = 0;
  std::vector<RankStatus> ranks;
};

// Returns "running", "waiting in collective 12", "stopped", "exited with code 1", "killed by
// signal 9", "starting", or "no progress reported" for a live rank that writes no record.
std::string DescribeState(const RankStatus& rank);
// Returns the state's one-word name, as in the JSON: starting running waiting stopped exited.
const char* StateName(RankState state);

std::string EncodeMachineStatus(const MachineStatus& machine);
std::optional<MachineStatus> DecodeMachineStatus(absl::string_view text);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_STATUS_RANK_STATUS_H_
