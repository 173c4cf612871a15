// RunAgent: plan → (rendezvous) → spawn → supervise → report, one attempt after another.
#include "launcher/agent/agent.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/defaults.h"
#include "common/device_info.h"
#include "common/exit_codes.h"
#include "common/logging.h"
#include "common/net.h"
#include "common/random.h"
#include "common/seconds.h"
#include "launcher/agent/plan.h"
#include "launcher/agent/rendezvous.h"
#include "launcher/process/failure_report.h"
#include "launcher/process/os_util.h"
#include "launcher/process/output.h"
#include "launcher/process/signals.h"
#include "launcher/process/subprocess.h"
#include "launcher/process/supervisor.h"

namespace accel::launcher {
namespace {

void Say(const std::string& line) { std::fprintf(stderr, "[accel-launch] %s\n", line.c_str()); }

class Agent {
 public:
  Agent(const LaunchRequest& request, const SignalFd& signals, AbortChannel& abort)
      : request_(request), config_(request.config), signals_(signals), abort_(abort) {}

  int Run();

 private:
  // Replaces the launcher with the only worker of a one-process job (no rendezvous).
  int ExecSingleWorker();
  // Returns the scratch directory of `attempt` (error and progress files).
  std::string AttemptScratchDir(int attempt) const;
  absl::StatusOr<std::vector<WorkerLaunch>> MakeWorkers(const RendezvousResult& rdzv);
  int Finish(int code);

  const LaunchRequest& request_;
  const Config& config_;
  const SignalFd& signals_;
  AbortChannel& abort_;
  LaunchPlan plan_;
  std::string program_;
  std::string host_ = HostName();
  std::string scratch_root_;  // removed at the end when it is ours (no log_dir)
  std::vector<std::string> base_env_ = CurrentEnvironment();
};

int Agent::Run() {
  if (request_.argv.empty()) {
    Say("launch: no program given (usage: accel-launch [options] program [args...])");
    return kExitUsage;
  }
  std::string why_no_gpu;
  const bool want_gpu = !config_.use_cpu && config_.distributed_type != DistributedType::kMultiCpu;
  const int gpus = want_gpu ? CountGpus(&why_no_gpu) : 0;
  auto plan = MakePlan(config_, gpus, why_no_gpu);
  if (!plan.ok()) {
    Say(std::string(plan.status().message()));
    return kExitUsage;
  }
  plan_ = *std::move(plan);
  if (plan_.run_id.empty()) {
    // Every machine must join with the same id: derive it from what they already share.
    plan_.run_id = plan_.num_machines > 1
                       ? absl::StrCat("job-", config_.main_process_ip, "-",
                                      config_.main_process_port, "-", config_.num_processes)
                       : RandomHex(6).value_or(std::string(12, '0'));
  }
  for (const std::string& notice : plan_.notices) {
    Say(notice);
  }

  auto rdzv = AgentRendezvous::Create(config_, plan_, host_, request_.dry_run);
  if (!rdzv.ok()) {
    Say(std::string(rdzv.status().message()));
    return kExitRendezvous;
  }
  if (*rdzv != nullptr) {
    plan_.rendezvous_endpoint = (*rdzv)->endpoint();
  }
  if (request_.dry_run) {
    std::fputs(FormatPlan(plan_, request_.argv).c_str(), stdout);
    return kExitOk;
  }

  const char* path_env = std::getenv("PATH");
  auto program = ResolveProgram(request_.argv.front(), path_env != nullptr ? path_env : "");
  if (!program.ok()) {
    Say(absl::StrCat("launch: ", program.status().message()));
    return kExitUsage;
  }
  program_ = *std::move(program);
  std::fputs(FormatPlan(plan_, request_.argv).c_str(), stderr);

  if (*rdzv == nullptr && config_.log_dir.empty() && config_.max_restarts == 0 &&
      config_.hang_timeout_s <= 0) {
    return ExecSingleWorker();
  }
  scratch_root_ =
      config_.log_dir.empty()
          ? absl::StrCat(std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR") : "/tmp",
                         "/accel-", plan_.run_id, "-m", plan_.machine_rank)
          : absl::StrCat(config_.log_dir, "/", plan_.run_id);

  SupervisorOptions options;
  options.machine_rank = plan_.machine_rank;
  options.host = host_;
  options.shutdown_grace = absl::FromChrono(FromSeconds(config_.shutdown_grace_s));
  options.monitor_interval = absl::FromChrono(FromSeconds(config_.monitor_interval_s));
  options.hang_timeout = absl::FromChrono(FromSeconds(config_.hang_timeout_s));
  Supervisor supervisor(options, signals_, abort_);
  AgentRendezvous* rendezvous = rdzv->get();

  for (int restarts = 0;; ++restarts) {
    RendezvousResult result;
    if (rendezvous != nullptr) {
      auto joined = rendezvous->Join(signals_, abort_);
      if (!joined.ok()) {
        Say(std::string(joined.status().message()));
        return Finish(kExitRendezvous);
      }
      result = *std::move(joined);
    } else {
      abort_.Reset();
      result.attempt = restarts;
      auto port = PickFreePort("127.0.0.1");
      result.master_port = port.ok() ? *port : defaults::kMainProcessPort;
    }
    auto workers = MakeWorkers(result);
    if (!workers.ok()) {
      Say(std::string(workers.status().message()));
      return Finish(kExitWorkerFailed);
    }
    OutputOptions output;
    output.attempt_dir =
        config_.log_dir.empty() ? "" : absl::StrCat(scratch_root_, "/attempt_", result.attempt);
    output.console = config_.log_dir.empty() || config_.tee;
    output.ranks_filter = config_.ranks_filter;
    OutputRouter router(output);

    const bool can_restart = result.attempt < config_.max_restarts;
    auto on_failure = [&](const WorkerFailure& failure) {
      if (rendezvous != nullptr) {
        rendezvous->ReportFailure(result.attempt, failure, can_restart);
      }
    };
    auto on_interrupt = [&](int signal) {
      if (rendezvous != nullptr) {
        rendezvous->ReportInterrupted(result.attempt, signal);
      }
    };
    AttemptResult attempt = supervisor.Run(*std::move(workers), router, on_failure, on_interrupt);

    switch (attempt.end) {
      case AttemptEnd::kSucceeded:
        if (rendezvous != nullptr) {
          const int code = rendezvous->FinishDone(result.attempt, signals_, abort_);
          return Finish(code);
        }
        return Finish(kExitOk);
      case AttemptEnd::kInterrupted:
        Say(absl::StrCat("launch: interrupted by signal ", attempt.signal, "; workers stopped"));
        return Finish(ExitCodeForSignal(attempt.signal));
      case AttemptEnd::kSpawnFailed:
        Say(std::string(attempt.spawn_error.message()));
        if (rendezvous != nullptr) {
          rendezvous->ReportSpawnFailure(result.attempt, attempt.spawn_error);
        }
        return Finish(kExitWorkerFailed);
      case AttemptEnd::kWorkerFailed:
      case AttemptEnd::kHang: {
        SortRootCauseFirst(&attempt.failures);
        const char* what = attempt.end == AttemptEnd::kHang ? "hang detected" : "worker failed";
        std::fputs(FormatFailureReport(attempt.failures,
                                       absl::StrCat("[accel-launch] ", what, " (attempt ",
                                                    result.attempt, "), root cause first:"))
                       .c_str(),
                   stderr);
        if (can_restart) {
          Say(absl::StrCat("restarting: attempt ", result.attempt + 1, " of ",
                           config_.max_restarts + 1));
          continue;
        }
        return Finish(ExitCodeFor(attempt.failures.front()));
      }
      case AttemptEnd::kAborted: {
        if (rendezvous != nullptr && rendezvous->restart_requested()) {
          Say(absl::StrCat("restarting: attempt ", result.attempt + 1, " (requested by ",
                           attempt.abort_reason, ")"));
          continue;
        }
        if (rendezvous != nullptr) {
          std::vector<WorkerFailure> remote = {rendezvous->RemoteRootCause()};
          std::fputs(FormatFailureReport(remote, "[accel-launch] job aborted, root cause:").c_str(),
                     stderr);
          return Finish(rendezvous->RemoteExitCode());
        }
        Say(absl::StrCat("launch: aborted: ", attempt.abort_reason));
        return Finish(kExitWorkerFailed);
      }
    }
  }
}

int Agent::Finish(int code) {
  if (config_.log_dir.empty() && !scratch_root_.empty()) {
    RemoveTree(scratch_root_);
  }
  return code;
}

std::string Agent::AttemptScratchDir(int attempt) const {
  return absl::StrCat(scratch_root_, "/attempt_", attempt);
}

absl::StatusOr<std::vector<WorkerLaunch>> Agent::MakeWorkers(const RendezvousResult& rdzv) {
  std::vector<WorkerLaunch> workers;
  for (int local = 0; local < plan_.nproc_per_machine; ++local) {
    WorkerLaunch w;
    w.rank = rdzv.base_rank + local;
    w.local_rank = local;
    const std::string dir = absl::StrCat(AttemptScratchDir(rdzv.attempt), "/rank_", w.rank);
    if (auto status = MakeDirs(dir); !status.ok()) {
      return status;
    }
    w.files.error_file = dir + "/error.json";
    ::unlink(w.files.error_file.c_str());
    if (config_.hang_timeout_s > 0) {
      w.files.progress_file = dir + "/progress";
      ::unlink(w.files.progress_file.c_str());
    }
    w.spec.label = absl::StrCat("worker rank=", w.rank);
    w.spec.path = program_;
    w.spec.argv = request_.argv;
    w.spec.env = WorkerEnv(plan_, rdzv, local, w.files, base_env_);
    workers.push_back(std::move(w));
  }
  return workers;
}

int Agent::ExecSingleWorker() {
  RendezvousResult rdzv;
  auto port = PickFreePort("127.0.0.1");
  rdzv.master_port = port.ok() ? *port : defaults::kMainProcessPort;
  WorkerFiles files;  // the worker's error file goes next to nothing: the launcher is gone
  const char* tmp = std::getenv("TMPDIR");
  files.error_file =
      absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/accel-", plan_.run_id, "-error.json");
  std::vector<std::string> env = WorkerEnv(plan_, rdzv, 0, files, base_env_);
  std::vector<char*> argv;
  for (const std::string& a : request_.argv) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : env) {
    envp.push_back(const_cast<char*>(e.c_str()));
  }
  envp.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  ::signal(SIGPIPE, SIG_DFL);
  ::pthread_sigmask(SIG_SETMASK, &signals_.original_mask(), nullptr);
  ::execve(program_.c_str(), argv.data(), envp.data());
  const int err = errno;
  Say(absl::StrCat("spawn worker rank=0: execve ", program_, ": ", std::strerror(err)));
  return kExitUsage;
}

}  // namespace

int RunAgent(const LaunchRequest& request) {
  // Signals first: gRPC threads started later inherit the blocked mask.
  auto signals = SignalFd::Create();
  if (!signals.ok()) {
    Say(std::string(signals.status().message()));
    return kExitWorkerFailed;
  }
  auto abort = AbortChannel::Create();
  if (!abort.ok()) {
    Say(std::string(abort.status().message()));
    return kExitWorkerFailed;
  }
  Agent agent(request, *signals, **abort);
  return agent.Run();
}

}  // namespace accel::launcher
