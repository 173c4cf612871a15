// AttemptRun: one attempt's event loop, the body of Supervisor::Run (supervisor.h). Internal to
// launcher/process: include supervisor.h, not this.
#ifndef ACCEL_LAUNCHER_PROCESS_ATTEMPT_RUN_H_
#define ACCEL_LAUNCHER_PROCESS_ATTEMPT_RUN_H_

#include <poll.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "launcher/process/hang_watch.h"
#include "launcher/process/supervisor.h"

namespace accel::launcher::internal {

struct Worker {
  WorkerLaunch launch;
  ChildProcess process;
};

// One attempt's event loop: spawn every worker, then poll once after another (signals, aborts,
// output, exits, hang checks) until every worker is reaped and its output drained. A failure, a
// signal, an abort or a hang begins the teardown (BeginStop): the signal to every process group,
// then SIGKILL once the grace is over (KillNow); an abort that the regroup hook answers (an
// in-place membership change) does not. Lives for one Supervisor::Run call.
class AttemptRun {
 public:
  AttemptRun(const SupervisorOptions& options, const SignalFd& signals, AbortChannel& abort,
             OutputRouter& router, const std::function<void(const WorkerFailure&)>& on_failure,
             const std::function<void(int signal, const std::string& sender)>& on_interrupt,
             JobProgress* job, WorkerObserver* observer, RegroupHook regroup = nullptr);

  // Runs the attempt to its end; call once.
  AttemptResult Run(std::vector<WorkerLaunch> launches);

 private:
  // Starts every worker; at the first that cannot start, stops those already running.
  void SpawnAll(std::vector<WorkerLaunch> launches);
  // Waits for the next event and handles it. Returns false once the attempt is over.
  bool PollOnce();
  // Returns true when every worker is reaped and its output drained (or the drain deadline
  // ran out); the first time none is running, kills what is left in their process groups.
  bool Over(absl::Time now);
  // Returns the poll timeout: the next of the kill, drain and hang-check deadlines.
  absl::Time NextWake() const;
  void OnSignals();
  void OnAbort();
  // Moves the running workers into the new generation `next` (RegroupHook answered): their new
  // ranks in the router, the hang watch, the failure rows and the new observer.
  void ApplyRegroup(const Regroup& next);
  // Reaps the workers that exited; a failure among them begins the teardown.
  void OnExit(absl::Time now);
  // Returns true when `failures` are all kills from outside and the launcher's own signal
  // follows within the grace (it is then handled): the failures are part of an interruption.
  bool OwnSignalFollows(const std::vector<WorkerFailure>& failures);
  // Samples the ranks for hang detection; a verdict whose root cause runs here (or whose
  // machine did not report it in time) begins the teardown.
  void OnHangCheck(absl::Time now);
  // Ends the attempt with the hang verdict: the root cause's row (reported when it runs here).
  void EndWithHang(const HangVerdict& verdict, bool local, absl::Time now);
  // Signals every process group with `signal` and starts the grace (once per attempt).
  void BeginStop(int signal);
  // SIGKILLs every process group: the grace is over, or a second signal came.
  void KillNow();
  void SignalAll(int signal);
  // Returns a failure record of `worker` seen at `now` (exit and messages left to the caller).
  WorkerFailure NewFailure(const Worker& worker, absl::Time now) const;
  // Fills in the error files and final stderr tails once the output is drained.
  void CompleteFailures();

  const SupervisorOptions& options_;
  const SignalFd& signals_;
  AbortChannel& abort_;
  OutputRouter& router_;
  const std::function<void(const WorkerFailure&)>& on_failure_;
  const std::function<void(int signal, const std::string& sender)>& on_interrupt_;
  WorkerObserver* observer_;   // may be null; the generation's (ApplyRegroup)
  const RegroupHook regroup_;  // may be empty
  HangWatch hang_;
  const bool watch_hangs_;

  AttemptResult result_;
  std::vector<Worker> workers_;
  std::vector<pollfd> fds_;
  bool stopping_ = false;
  bool killed_ = false;
  absl::Time kill_deadline_ = absl::InfiniteFuture();
  absl::Time drain_deadline_ = absl::InfiniteFuture();
  absl::Time next_hang_check_ = absl::InfiniteFuture();
};

}  // namespace accel::launcher::internal

#endif  // ACCEL_LAUNCHER_PROCESS_ATTEMPT_RUN_H_
