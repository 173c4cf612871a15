// The per-machine agent's internals, shared by its files: agent.cc (prepare, plan, run
// directory, the loop), agent_attempt.cc (one attempt and the decision after it),
// agent_workers.cc (the workers' launch specs and the one-process job). Not a public header:
// launcher/agent/agent.h's RunAgent is the entry point.
#ifndef ACCEL_LAUNCHER_AGENT_AGENT_INTERNAL_H_
#define ACCEL_LAUNCHER_AGENT_AGENT_INTERNAL_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/unique_fd.h"
#include "launcher/agent/agent.h"
#include "launcher/agent/command.h"
#include "launcher/agent/plan.h"
#include "launcher/agent/rendezvous.h"
#include "launcher/process/failure_report.h"
#include "launcher/process/os_util.h"
#include "launcher/process/signals.h"
#include "launcher/process/supervisor.h"
#include "launcher/status/run_dir.h"

namespace accel::launcher::internal {

inline constexpr char kLoopback[] = "127.0.0.1";  // MASTER_ADDR of a one-machine job

// One launch on this machine: Prepare, then one attempt after another (RunOneAttempt), each
// followed by a decision (AfterAttempt): done, restart, or stop with an exit code.
class Agent {
 public:
  Agent(const LaunchRequest& request, const SignalFd& signals, AbortChannel& abort)
      : request_(request), config_(request.config), signals_(signals), abort_(abort) {}

  int Run();

 private:
  // Plans the job, sets up the rendezvous, resolves the program and prints the plan. Returns the
  // exit code when the launch ends here (an error, a dry run), nullopt to go on.
  std::optional<int> Prepare();
  // Resolves the program every worker runs into command_ (a .py through the interpreter, -m, a
  // PATH lookup). Returns kExitUsage, having said why, when it does not resolve.
  std::optional<int> ResolveCommand();
  // Makes plan_ (with its run id) and prints its notices. Returns false, having said why, when
  // the configuration cannot be planned.
  bool PlanJob();
  // Fills the plan's settings that come from the command line and this machine (torchrun style,
  // role, explicit accumulation, cores, CPU shares, the fixed MASTER_PORT).
  void CompletePlan();
  // Returns true when the job is one process with nothing to watch (single_worker.h).
  bool RunsAsSingleWorker() const;
  // Runs the only worker of a one-process job (no rendezvous) as its parent.
  int RunOnlyWorker();
  // Makes (or checks) the run directory, once (launcher/status/run_dir.h).
  absl::Status OpenRunDirectory();
  SupervisorOptions MakeSupervisorOptions() const;
  // Joins the rendezvous for the next attempt; alone, numbers it `restarts` and picks a port.
  absl::StatusOr<RendezvousResult> BeginAttempt(int restarts);
  // Says how the generation `joined` changed the membership (elastic; launcher/agent/elastic.h).
  void SayGenerationChange(const RendezvousResult& joined);
  // Runs one attempt. Returns the exit code when the launch ends, nullopt to restart.
  std::optional<int> RunOneAttempt(Supervisor& supervisor, int restarts);
  // Runs the network preflight once, after the first join. Returns the exit code when the launch
  // ends here (`accel-launch preflight`, or a slow link under strict), nullopt to go on.
  std::optional<int> Preflight(const RendezvousResult& joined);
  // Decides what follows `attempt` (numbered `number`): the exit code, or nullopt to restart.
  std::optional<int> AfterAttempt(AttemptResult& attempt, int number, bool can_restart);
  std::optional<int> AfterFailure(AttemptResult& attempt, int number, bool can_restart);
  std::optional<int> AfterAbort(const AttemptResult& attempt, int number);
  // Returns the job's root cause when it is not `local_root` (another machine failed first and
  // ours followed), as the rendezvous says within defaults::kRootCauseWait.
  std::optional<WorkerFailure> JobRootCause(const WorkerFailure& local_root) const;
  // Returns whether this machine reported the hang that ended `attempt` to the server (an agreed
  // verdict naming a local rank, elastic membership) or its failed worker (in-place jobs), so that
  // the server decides who goes on, once the decision arrived (or defaults::kRootCauseWait passed).
  bool ReportedHang(const AttemptResult& attempt) const;
  // The supervisor's regroup hook of an in-place job (launcher/agent/in_place.h): after a
  // membership change, joins the next generation; when the workers of `current` go on in it,
  // tells them (the generation file), makes it `current` and returns true. Otherwise keeps the
  // join for the next attempt (pending_join_) and returns false: the workers restart.
  bool RegroupInPlace(RendezvousResult* current);
  std::string GenerationPath() const { return absl::StrCat(run_dir_.path, "/generation"); }
  // Returns MASTER_PORT for a job without rendezvous server: the fixed port, or a free one.
  int MasterPort() const;
  // Returns the directory of `attempt` (error, progress and preflight files, logs), relative to
  // the run directory, and makes it with `more` ("/rank_3") under it.
  static std::string AttemptDir(int attempt) { return absl::StrCat("attempt_", attempt); }
  absl::StatusOr<UniqueFd> MakeAttemptDir(int attempt, const std::string& more) const;
  std::string AttemptPath(int attempt) const {
    return absl::StrCat(run_dir_.path, "/", AttemptDir(attempt));
  }
  absl::StatusOr<std::vector<WorkerLaunch>> MakeWorkers(const RendezvousResult& rdzv);
  // Returns the Python progress module's directory in the run directory, written on first use;
  // "" when the workers do not run Python, python_progress is off, or it cannot be written.
  std::string PythonModuleDir();
  int Finish(int code);

  const LaunchRequest& request_;
  const Config& config_;
  const SignalFd& signals_;
  AbortChannel& abort_;
  LaunchPlan plan_;
  std::unique_ptr<AgentRendezvous> rendezvous_;  // null for a single process
  WorkerCommand command_;                        // what every worker execs
  std::string host_ = HostName();
  RunDir run_dir_;  // made after the first join; a scratch one is removed at the end
  std::vector<std::string> base_env_ = CurrentEnvironment();
  bool preflight_done_ = false;
  int last_world_ = 0;     // the previous generation's world size
  int restart_count_ = 0;  // the job's restarts when the current attempt began
  std::optional<std::string> python_module_dir_;  // PythonModuleDir's answer, once known
  // This attempt's failure went to the server as ReportHang (it decides who goes on).
  bool reported_hang_ = false;
  // A join made by RegroupInPlace whose generation restarts the workers: the next attempt's.
  std::optional<absl::StatusOr<RendezvousResult>> pending_join_;
  // The current workers were started into a running in-place job (`joining`): every generation
  // file written while they live says so, since they may still be starting when the next
  // generation comes, and would otherwise start it as a first start holding a state of their own.
  bool workers_joining_ = false;
};

}  // namespace accel::launcher::internal

#endif  // ACCEL_LAUNCHER_AGENT_AGENT_INTERNAL_H_
