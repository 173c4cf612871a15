// RunAgent: plan → (rendezvous) → spawn → supervise → report, one attempt after another.
#include "launcher/agent/agent.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/defaults.h"
#include "common/device_info.h"
#include "common/exit_codes.h"
#include "common/logging.h"
#include "common/net.h"
#include "common/random.h"
#include "common/safe_file.h"
#include "common/seconds.h"
#include "launcher/agent/command.h"
#include "launcher/agent/cpu_affinity.h"
#include "launcher/agent/master_port.h"
#include "launcher/agent/plan.h"
#include "launcher/agent/preflight_run.h"
#include "launcher/agent/python_progress.h"
#include "launcher/agent/rendezvous.h"
#include "launcher/agent/rendezvous_token.h"
#include "launcher/agent/single_worker.h"
#include "launcher/agent/status_exchange.h"
#include "launcher/agent/worker_env.h"
#include "launcher/process/failure_report.h"
#include "launcher/process/hang.h"
#include "launcher/process/os_util.h"
#include "launcher/process/output.h"
#include "launcher/process/signals.h"
#include "launcher/process/subprocess.h"
#include "launcher/process/supervisor.h"
#include "launcher/status/job_file.h"
#include "launcher/status/run_dir.h"

namespace accel::launcher {
namespace {

// Returns what the other ranks were doing when a hang was found, under the report table.
std::string FormatHangNotes(const std::vector<std::string>& notes) {
  if (notes.empty()) {
    return "";
  }
  std::string out = "  the other ranks:\n";
  for (const std::string& note : notes) {
    absl::StrAppend(&out, "    ", note, "\n");
  }
  return out;
}

constexpr char kLoopback[] = "127.0.0.1";  // MASTER_ADDR of a one-machine job

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
  std::optional<std::string> python_module_dir_;  // PythonModuleDir's answer, once known
};

int Agent::Run() {
  if (std::optional<int> code = Prepare(); code.has_value()) {
    return *code;
  }
  if (request_.preflight_only && plan_.num_machines == 1) {
    Notice("network preflight: one machine, no links to measure");
    return kExitOk;
  }
  if (RunsAsSingleWorker()) {
    return RunOnlyWorker();
  }
  Supervisor supervisor(MakeSupervisorOptions(), signals_, abort_);
  for (int restarts = 0;; ++restarts) {
    if (std::optional<int> code = RunOneAttempt(supervisor, restarts); code.has_value()) {
      return Finish(*code);
    }
  }
}

std::optional<int> Agent::ResolveCommand() {
  ProgramOptions program_options;
  program_options.module = request_.module;
  program_options.no_python = request_.no_python;
  program_options.run_path = request_.run_path;
  program_options.python = config_.python;
  const char* path_env = std::getenv("PATH");
  auto command =
      ResolveWorkerCommand(request_.argv, program_options, path_env != nullptr ? path_env : "");
  if (!command.ok()) {
    Notice(absl::StrCat("launch: ", command.status().message()));
    return kExitUsage;
  }
  command_ = *std::move(command);
  return std::nullopt;
}

std::optional<int> Agent::Prepare() {
  if (request_.argv.empty() && !request_.preflight_only) {
    Notice("launch: no program given (usage: accel-launch [options] program [args...])");
    return kExitUsage;
  }
  if (!PlanJob()) {
    return kExitUsage;
  }
  // The program resolves for a dry run exactly as for a launch: the same error, the same code.
  if (!request_.preflight_only) {
    if (std::optional<int> code = ResolveCommand(); code.has_value()) return code;
  }
  if (absl::Status port = CheckMasterPort(plan_, kLoopback); !port.ok()) {
    Notice(port.message());
    return kExitRendezvous;
  }
  std::string token;
  if (!plan_.single_process) {
    auto found = FindRendezvousToken(config_, request_.dry_run);
    if (!found.ok()) {
      Notice(absl::StrCat("rendezvous token: ", found.status().message()));
      return kExitUsage;
    }
    for (const std::string& warning : found->warnings) Notice(absl::StrCat("warning: ", warning));
    token = std::move(found->token);
    plan_.rendezvous_token_source = found->source;
  }
  auto rdzv = AgentRendezvous::Create(config_, plan_, host_, token, request_.dry_run);
  if (!rdzv.ok()) {
    Notice(rdzv.status().message());
    return kExitRendezvous;
  }
  rendezvous_ = *std::move(rdzv);
  if (rendezvous_ != nullptr) {
    plan_.rendezvous_endpoint = rendezvous_->endpoint();
  }
  if (request_.dry_run) {
    std::fputs(FormatPlan(plan_, command_.argv).c_str(), stdout);  // the command's output
    return kExitOk;
  }
  if (request_.preflight_only) return std::nullopt;
  NoticeBlock(FormatPlan(plan_, command_.argv));
  return std::nullopt;
}

void Agent::CompletePlan() {
  plan_.torchrun_style = request_.torchrun_style;
  plan_.torchrun_env = plan_.torchrun_env || request_.torchrun_style;
  if (!request_.role.empty()) plan_.role_name = request_.role;
  plan_.set_gradient_accumulation = request_.set_gradient_accumulation;
  plan_.physical_cores = PhysicalCores("/sys");
  if (plan_.cpu_affinity) {
    plan_.cpu_sets = CpuShares(NumaNodes("/sys", AllowedCpus()), plan_.nproc_per_machine);
  }
  if (plan_.num_machines == 1) plan_.fixed_master_port = config_.main_process_port;
}

bool Agent::PlanJob() {
  std::string why_no_gpu;
  const bool want_gpu = !config_.use_cpu && config_.distributed_type != DistributedType::kMultiCpu;
  const int gpus = want_gpu ? CountGpus(&why_no_gpu) : 0;
  auto plan = MakePlan(config_, gpus, why_no_gpu);
  if (!plan.ok()) {
    Notice(plan.status().message());
    return false;
  }
  plan_ = *std::move(plan);
  if (plan_.run_id.empty() && plan_.machine_rank == 0) {
    // Random, so nobody can guess it; machine 0's server serves it, and the other machines
    // join with none and learn it from their Join answer.
    auto id = RandomHex(8);
    if (!id.ok()) {
      Notice(absl::StrCat("make run id: ", id.status().message()));
      return false;
    }
    plan_.run_id = absl::StrCat("job-", *id);
  }
  for (const std::string& notice : plan_.notices) {
    Notice(notice);
  }
  CompletePlan();
  return true;
}

bool Agent::RunsAsSingleWorker() const {
  return rendezvous_ == nullptr && config_.log_dir.empty() && config_.max_restarts == 0 &&
         plan_.hang_timeout_s <= 0;
}

absl::Status Agent::OpenRunDirectory() {
  if (run_dir_.fd.valid()) return absl::OkStatus();
  RunDirPlace place;
  place.log_dir = config_.log_dir;
  place.log_mode = config_.log_mode;
  place.run_id = plan_.run_id;
  place.machine_rank = plan_.machine_rank;
  absl::StatusOr<RunDir> dir = CreateRunDir(place, ProcessEnvironment());
  if (!dir.ok()) return dir.status();
  run_dir_ = *std::move(dir);
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> Agent::MakeAttemptDir(int attempt, const std::string& more) const {
  return MakeDirsAt(run_dir_.fd.get(), absl::StrCat(AttemptDir(attempt), more),
                    RunDirMode(config_.log_mode), run_dir_.path);
}

SupervisorOptions Agent::MakeSupervisorOptions() const {
  SupervisorOptions options;
  options.machine_rank = plan_.machine_rank;
  options.host = host_;
  options.shutdown_grace = absl::FromChrono(FromSeconds(config_.shutdown_grace_s));
  options.monitor_interval = absl::FromChrono(FromSeconds(config_.monitor_interval_s));
  options.hang_timeout = absl::FromChrono(FromSeconds(plan_.hang_timeout_s));
  return options;
}

absl::StatusOr<RendezvousResult> Agent::BeginAttempt(int restarts) {
  if (rendezvous_ != nullptr) {
    return rendezvous_->Join(signals_, abort_);
  }
  abort_.Reset();
  RendezvousResult result;
  result.attempt = restarts;
  result.master_port = MasterPort();
  return result;
}

std::optional<int> Agent::RunOneAttempt(Supervisor& supervisor, int restarts) {
  auto joined = BeginAttempt(restarts);
  if (!joined.ok()) {
    Notice(joined.status().message());
    return kExitRendezvous;
  }
  RendezvousResult& result = *joined;
  if (!result.run_id.empty()) plan_.run_id = result.run_id;  // machine 0 named the run
  if (absl::Status dir = OpenRunDirectory(); !dir.ok()) {
    Notice(dir.message());
    if (rendezvous_ != nullptr) rendezvous_->ReportSpawnFailure(result.attempt, dir);
    return kExitWorkerFailed;
  }
  if (plan_.fixed_master_port > 0) result.master_port = plan_.fixed_master_port;
  if (std::optional<int> code = Preflight(result); code.has_value()) return code;
  auto workers = MakeWorkers(result);
  if (!workers.ok()) {
    Notice(workers.status().message());
    return kExitWorkerFailed;
  }
  OutputOptions output;
  output.attempt_dir = config_.log_dir.empty() ? "" : AttemptPath(result.attempt);
  output.dir_mode = RunDirMode(config_.log_mode);
  output.log_file_mode = LogFileMode(config_.log_mode);
  output.console = config_.log_dir.empty() || config_.tee;
  output.ranks_filter = config_.ranks_filter;
  for (int local : config_.local_ranks_filter) {
    output.ranks_filter.push_back(result.base_rank + local);  // torchrun's local ranks
  }
  OutputRouter router(output);

  const bool can_restart = result.attempt < config_.max_restarts;
  auto on_failure = [&](const WorkerFailure& failure) {
    if (rendezvous_ != nullptr) {
      rendezvous_->ReportFailure(result.attempt, failure, can_restart);
    }
  };
  auto on_interrupt = [&](int signal, const std::string& sender) {
    if (rendezvous_ != nullptr) {
      rendezvous_->ReportInterrupted(result.attempt, signal, sender);
    }
  };
  std::unique_ptr<JobProgress> job;
  if (rendezvous_ != nullptr && plan_.num_machines > 1 && plan_.hang_timeout_s > 0) {
    job = rendezvous_->OpenJobProgress(result, absl::FromChrono(FromSeconds(plan_.hang_timeout_s)));
  }
  std::unique_ptr<StatusExchange> status;
  if (rendezvous_ != nullptr) {
    status = StartStatus(
        StatusLaunch{&config_, &plan_, &result, host_, run_dir_.path, run_dir_.fd.get()});
  }
  AttemptResult attempt = supervisor.Run(*std::move(workers), router, on_failure, on_interrupt,
                                         job.get(), status.get());
  status.reset();  // stops publishing this attempt's status and erases the status line
  job.reset();     // stops publishing this attempt's progress
  return AfterAttempt(attempt, result.attempt, can_restart);
}

std::optional<int> Agent::Preflight(const RendezvousResult& joined) {
  if (preflight_done_ || rendezvous_ == nullptr || plan_.num_machines == 1 ||
      (!config_.preflight && !request_.preflight_only)) {
    return std::nullopt;
  }
  preflight_done_ = true;
  if (absl::StatusOr<UniqueFd> made = MakeAttemptDir(joined.attempt, ""); !made.ok()) {
    Notice(made.status().message());
    return kExitWorkerFailed;
  }
  absl::StatusOr<PreflightResult> result = RunPreflight(
      PreflightLaunch{&config_, &plan_, &joined, AttemptPath(joined.attempt), &signals_});
  const bool ok = result.ok() && ReportPreflight(*result, config_, plan_.machine_rank);
  if (!result.ok()) Notice(result.status().message());
  if (request_.preflight_only) {
    const int done = rendezvous_->FinishDone(joined.attempt, signals_, abort_);
    return ok ? done : kExitWorkerFailed;
  }
  if (!ok && config_.strict) return kExitWorkerFailed;
  return std::nullopt;
}

std::optional<int> Agent::AfterAttempt(AttemptResult& attempt, int number, bool can_restart) {
  switch (attempt.end) {
    case AttemptEnd::kSucceeded:
      if (rendezvous_ != nullptr) {
        return rendezvous_->FinishDone(number, signals_, abort_);
      }
      return kExitOk;
    case AttemptEnd::kInterrupted:
      Notice(absl::StrCat("launch: ", DescribeLauncherSignal(attempt.signal, attempt.signal_sender),
                          "; workers stopped"));
      return ExitCodeForSignal(attempt.signal);
    case AttemptEnd::kSpawnFailed:
      Notice(attempt.spawn_error.message());
      if (rendezvous_ != nullptr) {
        rendezvous_->ReportSpawnFailure(number, attempt.spawn_error);
      }
      return kExitWorkerFailed;
    case AttemptEnd::kWorkerFailed:
    case AttemptEnd::kHang:
      return AfterFailure(attempt, number, can_restart);
    case AttemptEnd::kAborted:
      return AfterAbort(attempt, number);
  }
  return kExitWorkerFailed;  // unreachable: every AttemptEnd is handled above
}

std::optional<int> Agent::AfterFailure(AttemptResult& attempt, int number, bool can_restart) {
  SortRootCauseFirst(&attempt.failures);
  std::vector<WorkerFailure> rows = attempt.failures;
  if (std::optional<WorkerFailure> job_root = JobRootCause(rows.front()); job_root.has_value()) {
    rows.insert(rows.begin(), *std::move(job_root));  // ours followed from it
  }
  const char* what = attempt.end == AttemptEnd::kHang ? "hang detected" : "worker failed";
  NoticeBlock(absl::StrCat(FormatFailureReport(rows, absl::StrCat(kLogPrefix, what, " (attempt ",
                                                                  number, "), root cause first:")),
                           FormatHangNotes(attempt.hang_notes)));
  if (can_restart) {
    Notice(absl::StrCat("restarting: attempt ", number + 1, " of ", config_.max_restarts + 1,
                        " (cause: ", DescribeCause(rows.front()), ")"));
    return std::nullopt;
  }
  return kExitWorkerFailed;  // the worker's own code is in the report above
}

std::optional<WorkerFailure> Agent::JobRootCause(const WorkerFailure& local_root) const {
  if (rendezvous_ == nullptr || plan_.num_machines == 1) {
    return std::nullopt;
  }
  std::optional<rendezvous::Event> event =
      rendezvous_->AwaitEvent(absl::FromChrono(defaults::kRootCauseWait));
  if (!event.has_value() || event->kind == rendezvous::Event::Kind::kDone) {
    return std::nullopt;
  }
  WorkerFailure job_root = rendezvous_->RemoteRootCause();
  if (job_root.machine_rank == local_root.machine_rank && job_root.rank == local_root.rank) {
    return std::nullopt;  // the job's root cause is ours
  }
  return job_root;
}

std::optional<int> Agent::AfterAbort(const AttemptResult& attempt, int number) {
  if (rendezvous_ == nullptr) {
    Notice(absl::StrCat("launch: aborted: ", attempt.abort_reason));
    return kExitWorkerFailed;
  }
  const WorkerFailure cause = rendezvous_->RemoteRootCause();
  if (rendezvous_->restart_requested()) {
    Notice(absl::StrCat("restarting: attempt ", number + 1, " of ", config_.max_restarts + 1,
                        " (cause: ", DescribeCause(cause), ")"));
    return std::nullopt;
  }
  NoticeBlock(absl::StrCat(
      FormatFailureReport({cause}, absl::StrCat(kLogPrefix, "job aborted, root cause:")),
      FormatHangNotes(attempt.hang_notes)));
  return rendezvous_->RemoteExitCode();
}

int Agent::Finish(int code) {
  if (run_dir_.scratch) {
    RemoveTree(run_dir_.path);
  } else if (run_dir_.fd.valid()) {
    ::unlinkat(run_dir_.fd.get(), kJobTokenFileName, 0);  // the job's token is kept while it runs
  }
  return code;
}

absl::StatusOr<std::vector<WorkerLaunch>> Agent::MakeWorkers(const RendezvousResult& rdzv) {
  std::vector<WorkerLaunch> workers;
  for (int local = 0; local < plan_.nproc_per_machine; ++local) {
    WorkerLaunch w;
    w.rank = rdzv.base_rank + local;
    w.local_rank = local;
    // The worker creates its error and progress files new (O_EXCL | O_NOFOLLOW) in this
    // private directory: an old run's are removed first.
    const std::string rank_dir = absl::StrCat("/rank_", w.rank);
    absl::StatusOr<UniqueFd> dir = MakeAttemptDir(rdzv.attempt, rank_dir);
    if (!dir.ok()) return dir.status();
    const std::string path = AttemptPath(rdzv.attempt) + rank_dir;
    w.files.error_file = path + "/error.json";
    ::unlinkat(dir->get(), "error.json", 0);
    if (plan_.hang_timeout_s > 0 || (rendezvous_ != nullptr && config_.status_interval_s > 0)) {
      w.files.progress_file = path + "/progress";
      ::unlinkat(dir->get(), "progress", 0);
      w.files.python_module_dir = PythonModuleDir();
    }
    w.spec.label = absl::StrCat("worker rank=", w.rank);
    w.spec.path = command_.path;
    w.spec.argv = command_.argv;
    w.spec.env = WorkerEnv(plan_, rdzv, local, w.files, base_env_);
    if (plan_.cpu_affinity) w.spec.cpus = plan_.cpu_sets[static_cast<size_t>(local)];
    workers.push_back(std::move(w));
  }
  return workers;
}

std::string Agent::PythonModuleDir() {
  if (!python_module_dir_.has_value()) {
    python_module_dir_ = "";
    if (command_.python && config_.python_progress) {
      const std::string dir = absl::StrCat(run_dir_.path, "/python");  // private (0700)
      if (absl::Status written = WritePythonProgressModule(dir); written.ok()) {
        python_module_dir_ = dir;
      } else {
        Notice(absl::StrCat("launch: ", written.message(), "; Python workers report no progress"));
      }
    }
  }
  return *python_module_dir_;
}

int Agent::MasterPort() const {
  if (plan_.fixed_master_port > 0) return plan_.fixed_master_port;
  auto port = PickFreePort(kLoopback);
  return port.ok() ? *port : defaults::kMainProcessPort;
}

int Agent::RunOnlyWorker() {
  RendezvousResult rdzv;
  rdzv.master_port = MasterPort();
  SingleWorker worker;
  // The error file lives in a private scratch directory, like every run directory's files.
  RunDirPlace place;
  place.run_id = plan_.run_id;
  absl::StatusOr<RunDir> scratch = CreateRunDir(place, ProcessEnvironment());
  if (!scratch.ok()) {
    Notice(absl::StrCat("run directory: ", scratch.status().message()));
    return kExitWorkerFailed;
  }
  worker.error_file = absl::StrCat(scratch->path, "/error.json");
  WorkerFiles files;
  files.error_file = worker.error_file;
  worker.spec.label = "worker rank=0";
  worker.spec.path = command_.path;
  worker.spec.argv = command_.argv;
  worker.spec.env = WorkerEnv(plan_, rdzv, 0, files, base_env_);
  if (plan_.cpu_affinity) worker.spec.cpus = plan_.cpu_sets.front();
  worker.machine_rank = plan_.machine_rank;
  worker.host = host_;
  worker.shutdown_grace = absl::FromChrono(FromSeconds(config_.shutdown_grace_s));
  const int code = RunSingleWorker(std::move(worker), signals_);
  RemoveTree(scratch->path);
  return code;
}

}  // namespace

int RunAgent(const LaunchRequest& request) {
  // Signals first: gRPC threads started later inherit the blocked mask.
  auto signals = SignalFd::Create();
  if (!signals.ok()) {
    Notice(signals.status().message());
    return kExitWorkerFailed;
  }
  auto abort = AbortChannel::Create();
  if (!abort.ok()) {
    Notice(abort.status().message());
    return kExitWorkerFailed;
  }
  Agent agent(request, *signals, **abort);
  return agent.Run();
}

}  // namespace accel::launcher
