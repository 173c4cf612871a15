// Supervisor: spawns one attempt's workers, watches them without busy polling (one poll over
// pidfds, output pipes, the launcher's signalfd and an abort eventfd), and tears the group down
// all-or-nothing: SIGCONT (a stopped worker must be able to die) and SIGTERM to every process
// group → shutdown_grace → SIGKILL → reap. With a hang timeout it watches for hangs
// (hang_watch.h) every monitor interval.
//
// Run blocks until every worker has been reaped and its output drained (bounded by the grace
// and a short drain deadline once a teardown starts). It must run on the long-lived thread that
// forks (PR_SET_PDEATHSIG follows the forking thread).
#ifndef ACCEL_LAUNCHER_PROCESS_SUPERVISOR_H_
#define ACCEL_LAUNCHER_PROCESS_SUPERVISOR_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/defaults.h"
#include "common/unique_fd.h"
#include "launcher/process/failure_report.h"
#include "launcher/process/hang.h"
#include "launcher/process/output.h"
#include "launcher/process/signals.h"
#include "launcher/process/subprocess.h"
#include "launcher/process/worker_files.h"

namespace accel::launcher {

// A stop request from another thread (the rendezvous watcher): wakes the supervisor's poll
// through an eventfd. Thread-safe.
class AbortChannel {
 public:
  static absl::StatusOr<std::unique_ptr<AbortChannel>> Create();

  // Asks the supervisor to stop the workers; the first reason wins.
  void Abort(std::string reason);
  // Readable (POLLIN) once Abort was called.
  int fd() const { return fd_.get(); }
  // Returns the reason given to Abort ("" = none).
  std::string reason() const;
  // Forgets a previous Abort (before a new attempt).
  void Reset();

 private:
  AbortChannel() = default;
  UniqueFd fd_;
  mutable absl::Mutex mu_;
  std::string reason_ ABSL_GUARDED_BY(mu_);
};

struct SupervisorOptions {
  int machine_rank = 0;
  std::string host;
  absl::Duration shutdown_grace = absl::FromChrono(defaults::kShutdownGrace);
  absl::Duration monitor_interval = absl::FromChrono(defaults::kMonitorInterval);  // hang checks
  absl::Duration hang_timeout = absl::ZeroDuration();                              // zero = off
  // A rank before its first step is not idle for hang detection for this long (hang_watch.h).
  absl::Duration startup_timeout = absl::FromChrono(defaults::kStartupTimeout);
  // How long output still open after every worker was reaped is drained.
  absl::Duration drain_timeout = absl::FromChrono(defaults::kOutputDrainTimeout);
};

struct WorkerLaunch {
  int rank = 0;
  int local_rank = 0;
  SpawnSpec spec;  // stdout/stderr fds are filled in by the supervisor
  WorkerFiles files;
};

// Told about each worker as it starts and as it is reaped (the job's status follows them). Called
// on the supervisor's thread; implementations must not block.
class WorkerObserver {
 public:
  virtual ~WorkerObserver() = default;
  virtual void Started(const WorkerLaunch& worker, pid_t pid) = 0;
  virtual void Exited(int rank, const ExitStatus& status) = 0;
  // The supervisor began stopping every worker (a failure, a hang, a signal or an abort): from
  // here on the ranks' progress says how they die, not how they train.
  virtual void WorkersStopping() {}
};

enum class AttemptEnd {
  kSucceeded,     // every worker exited 0
  kWorkerFailed,  // a local worker exited non-zero or by a signal
  kHang,          // no rank of the job was active for hang_timeout
  kInterrupted,   // the launcher got SIGINT/SIGTERM/SIGHUP
  kAborted,       // AbortChannel (another machine failed)
  kSpawnFailed,   // a worker could not be started
};

struct AttemptResult {
  AttemptEnd end = AttemptEnd::kSucceeded;
  int signal = 0;                       // kInterrupted: the signal
  std::string signal_sender;            // kInterrupted: the sending program (e.g. "slurmstepd")
  std::vector<WorkerFailure> failures;  // local failures, root cause first (kHang: the root
                                        // cause, which may run on another machine)
  std::string abort_reason;             // kAborted
  absl::Status spawn_error;             // kSpawnFailed
  // A hang verdict: what the other ranks were doing ("rank 1 (machine 0): waiting in collective
  // 12"), also when the attempt then ended by the root-cause machine's abort.
  std::vector<std::string> hang_notes;
  // A hang verdict: the rank and machine the job waits on, the same on every machine when
  // `hang_verdict_agreed` (settled through the rendezvous store, or one machine); unagreed, it is
  // this machine's own (the store did not answer). Set with kHang, and with kAborted when the
  // root-cause machine's abort ended this attempt after the verdict. Elastic membership evicts
  // the verdict's machine only when it is agreed.
  std::optional<HangVerdict> hang_verdict;
  bool hang_verdict_agreed = false;
};

// What changes for the running workers when they go on into a new generation (Regroup).
struct Regroup {
  // This machine's first rank in the new generation: the worker of local rank l is rank
  // base_rank + l from now on (as libaccel renumbers it), in the output prefixes, the failure
  // rows, hang detection and the observer.
  int base_rank = 0;
  // The new generation's view of the other machines (null: this machine alone) and observer
  // (may be null). The previous ones are not used once the hook returned; every running worker is
  // announced to the new observer (Started) under its new rank.
  JobProgress* job = nullptr;
  WorkerObserver* observer = nullptr;
};

// Called on the supervisor's thread when the abort channel fires while the workers run: returns
// the new generation when they go on into it (elastic in-place recovery: the hook rejoined the
// rendezvous, which re-arms the channel, and told the workers), nullopt to stop them as usual.
using RegroupHook = std::function<std::optional<Regroup>()>;

class Supervisor {
 public:
  Supervisor(SupervisorOptions options, const SignalFd& signals, AbortChannel& abort)
      : options_(std::move(options)), signals_(signals), abort_(abort) {}

  // Runs one attempt of `workers` with their output through `router`. `on_failure` is called
  // once, at the first local failure (or a hang whose root cause runs here), and `on_interrupt`
  // at the launcher's first signal (with the sending program's name), both before the teardown,
  // so the agent can tell the rendezvous while the workers stop. A worker killed by
  // SIGTERM/SIGINT/SIGHUP from outside is a failure only when no signal reaches the
  // launcher within defaults::kOwnSignalGrace: a scheduler (Slurm's scancel, a time limit)
  // signals the workers and the launcher together. `job` (may be null: one machine) shows the
  // other machines' ranks to hang detection; `observer` (may be null) follows the workers;
  // `regroup` (may be empty) keeps the workers through a membership change (RegroupHook).
  AttemptResult Run(
      std::vector<WorkerLaunch> workers, OutputRouter& router,
      const std::function<void(const WorkerFailure&)>& on_failure,
      const std::function<void(int signal, const std::string& sender)>& on_interrupt = nullptr,
      JobProgress* job = nullptr, WorkerObserver* observer = nullptr,
      RegroupHook regroup = nullptr);

 private:
  SupervisorOptions options_;
  const SignalFd& signals_;
  AbortChannel& abort_;
};

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_PROCESS_SUPERVISOR_H_
