// RunAgent: plan → (rendezvous) → spawn → supervise → report, one attempt after another
// (agent_attempt.cc runs one attempt and decides what follows it; agent_workers.cc makes the
// workers).
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
#include "launcher/agent/agent_internal.h"
#include "launcher/agent/cpu_affinity.h"
#include "launcher/agent/master_port.h"
#include "launcher/agent/rendezvous_token.h"
#include "launcher/status/job_file.h"

namespace accel::launcher {
namespace internal {

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
  if (plan_.in_place && command_.python) {
    // Its workers cannot regroup: kept through a change, each would fail and evict its machine.
    Notice(absl::StrCat(
        "launch: elastic_in_place keeps the workers through membership changes, which only a "
        "program that calls libaccel's Accelerator::recover() survives; ",
        request_.argv.front(),
        " runs Python: drop --elastic_in_place (its workers restart at each generation with "
        "the torchrun environment)"));
    return kExitUsage;
  }
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
    plan_.rendezvous_transport = rendezvous_->transport();
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
  if (plan_.single_process && request_.set_hang_timeout && config_.hang_timeout_s > 0) {
    plan_.hang_timeout_s = config_.hang_timeout_s;  // one process, watched: asked for by name
  }
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
  options.startup_timeout = absl::FromChrono(FromSeconds(plan_.startup_timeout_s));
  return options;
}

int Agent::Finish(int code) {
  if (run_dir_.scratch) {
    RemoveTree(run_dir_.path);
  } else if (run_dir_.fd.valid()) {
    ::unlinkat(run_dir_.fd.get(), kJobTokenFileName, 0);  // the job's token is kept while it runs
  }
  return code;
}

int Agent::MasterPort() const {
  if (plan_.fixed_master_port > 0) return plan_.fixed_master_port;
  auto port = PickFreePort(kLoopback);
  return port.ok() ? *port : defaults::kMainProcessPort;
}

}  // namespace internal

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
  internal::Agent agent(request, *signals, **abort);
  return agent.Run();
}

}  // namespace accel::launcher
