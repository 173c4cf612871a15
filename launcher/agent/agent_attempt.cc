// The agent's attempts: join, spawn and supervise one attempt, then decide what follows it
// (done, restart, or the exit code) from how it ended.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/defaults.h"
#include "common/exit_codes.h"
#include "common/logging.h"
#include "common/seconds.h"
#include "launcher/agent/agent_internal.h"
#include "launcher/agent/elastic.h"
#include "launcher/agent/generation_watch.h"
#include "launcher/agent/in_place.h"
#include "launcher/agent/preflight_run.h"
#include "launcher/agent/status_exchange.h"
#include "launcher/process/failure_report.h"
#include "launcher/process/hang.h"
#include "launcher/process/output.h"

namespace accel::launcher::internal {
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

}  // namespace

absl::StatusOr<RendezvousResult> Agent::BeginAttempt(int restarts) {
  if (pending_join_.has_value()) {  // RegroupInPlace joined it already
    absl::StatusOr<RendezvousResult> joined = *std::move(pending_join_);
    pending_join_.reset();
    return joined;
  }
  if (rendezvous_ != nullptr) {
    return rendezvous_->Join(signals_, abort_);
  }
  abort_.Reset();
  RendezvousResult result;
  result.attempt = restarts;
  result.restart_count = restarts;
  result.group_rank = plan_.machine_rank;
  result.group_world_size = plan_.num_machines;
  result.master_port = MasterPort();
  return result;
}

void Agent::SayGenerationChange(const RendezvousResult& joined) {
  if (plan_.elastic && !joined.membership.empty() && rendezvous_ != nullptr) {
    GenerationChange change;
    change.generation = joined.attempt;
    change.membership = joined.membership;
    change.old_world = last_world_;
    change.new_world = joined.world_size;
    change.machines = joined.group_world_size;
    change.restart_count = joined.restart_count;
    change.max_restarts = config_.max_restarts;
    change.took = absl::Now() - rendezvous_->change_seen();
    Notice(FormatGenerationChange(change));
  }
  last_world_ = joined.world_size;
}

std::optional<int> Agent::RunOneAttempt(Supervisor& supervisor, int restarts) {
  auto joined = BeginAttempt(restarts);
  if (!joined.ok()) {
    Notice(joined.status().message());
    return kExitRendezvous;
  }
  RendezvousResult& result = *joined;
  SayGenerationChange(result);
  if (!result.run_id.empty()) plan_.run_id = result.run_id;  // machine 0 named the run
  if (absl::Status dir = OpenRunDirectory(); !dir.ok()) {
    Notice(dir.message());
    if (rendezvous_ != nullptr) rendezvous_->ReportSpawnFailure(result.attempt, dir);
    return kExitWorkerFailed;
  }
  if (plan_.fixed_master_port > 0) result.master_port = plan_.fixed_master_port;
  if (std::optional<int> code = Preflight(result); code.has_value()) return code;
  if (plan_.in_place) {
    plan_.generation_file = GenerationPath();
    // New workers join the running ones when the previous generation's training continues.
    workers_joining_ = result.continues;
    if (absl::Status written =
            WriteGenerationFile(GenerationPath(), result, plan_.nproc_per_machine, result.continues,
                                RecoverTimeoutMs(config_.rdzv_timeout_s));
        !written.ok()) {
      Notice(written.message());
      rendezvous_->ReportSpawnFailure(result.attempt, written);
      return kExitWorkerFailed;
    }
  }
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
  if (config_.dedup_output) output.dedup_window = absl::Seconds(config_.dedup_window_s);
  for (int local : config_.local_ranks_filter) {
    output.ranks_filter.push_back(result.base_rank + local);  // torchrun's local ranks
  }
  OutputRouter router(output);

  restart_count_ = result.restart_count;
  reported_hang_ = false;
  bool can_restart = result.restart_count < config_.max_restarts;  // job-wide budget
  RendezvousResult current = result;  // in-place jobs: the generation the workers are in now
  auto on_failure = [&](const WorkerFailure& failure) {
    if (rendezvous_ == nullptr) return;
    if (plan_.elastic && (failure.agreed_hang || plan_.in_place)) {
      rendezvous_->ReportHang(current.attempt, failure);  // the server decides who goes on
      reported_hang_ = true;
    } else {
      rendezvous_->ReportFailure(current.attempt, failure, can_restart);
    }
  };
  auto on_interrupt = [&](int signal, const std::string& sender) {
    if (rendezvous_ != nullptr) {
      rendezvous_->ReportInterrupted(current.attempt, signal, sender);
    }
  };
  // The status and the hang exchange follow the workers' generation (generation_watch.h).
  GenerationWatch watch(
      rendezvous_.get(),
      StatusLaunch{&config_, &plan_, nullptr, host_, run_dir_.path, run_dir_.fd.get()},
      plan_.num_machines > 1 ? absl::FromChrono(FromSeconds(plan_.hang_timeout_s))
                             : absl::ZeroDuration());
  watch.Open(result);
  RegroupHook regroup;
  if (plan_.in_place) {
    regroup = [&]() -> std::optional<Regroup> {
      if (!RegroupInPlace(&current)) return std::nullopt;
      restart_count_ = current.restart_count;
      can_restart = current.restart_count < config_.max_restarts;
      return watch.MoveTo(current);
    };
  }
  AttemptResult attempt = supervisor.Run(*std::move(workers), router, on_failure, on_interrupt,
                                         watch.job(), watch.observer(), regroup);
  watch.Close();  // stops publishing this attempt's status and progress; erases the status line
  return AfterAttempt(attempt, current.attempt, can_restart);
}

bool Agent::RegroupInPlace(RendezvousResult* current) {
  if (rendezvous_ == nullptr || !rendezvous_->restart_requested()) return false;
  absl::StatusOr<RendezvousResult> joined = rendezvous_->Join(signals_, abort_);
  if (!joined.ok() || !KeepsWorkers(*current, *joined)) {
    pending_join_ = std::move(joined);
    return false;
  }
  if (absl::Status written =
          WriteGenerationFile(GenerationPath(), *joined, plan_.nproc_per_machine, workers_joining_,
                              RecoverTimeoutMs(config_.rdzv_timeout_s));
      !written.ok()) {
    Notice(absl::StrCat(written.message(), "; restarting the workers"));
    pending_join_ = std::move(joined);
    return false;
  }
  SayGenerationChange(*joined);
  *current = *std::move(joined);
  return true;
}

std::optional<int> Agent::Preflight(const RendezvousResult& joined) {
  if (preflight_done_ || rendezvous_ == nullptr || plan_.num_machines == 1 ||
      joined.group_world_size != plan_.num_machines ||  // elastic, not every machine here
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
  if (ReportedHang(attempt)) {
    // The server decided what follows the hang this machine reported (ReportHang).
    if (rendezvous_->evicted()) {
      const WorkerFailure& root = attempt.failures.front();
      Notice(FormatEviction(plan_.machine_rank, host_, root.rank,
                            attempt.end == AttemptEnd::kWorkerFailed));
      return kExitWorkerFailed;
    }
    can_restart = can_restart && rendezvous_->restart_requested();
  }
  if (can_restart) {
    Notice(absl::StrCat("restarting: attempt ", restart_count_ + 1, " of ",
                        config_.max_restarts + 1, " (cause: ", DescribeCause(rows.front()), ")"));
    return std::nullopt;
  }
  if (std::string spent = DescribeSpentBudget(restart_count_, config_.max_restarts);
      !spent.empty()) {
    Notice(spent);
  }
  return kExitWorkerFailed;  // the worker's own code is in the report above
}

bool Agent::ReportedHang(const AttemptResult& attempt) const {
  if (!reported_hang_ || rendezvous_ == nullptr || attempt.failures.empty()) return false;
  rendezvous_->AwaitEvent(absl::FromChrono(defaults::kRootCauseWait));  // the server's decision
  return true;
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
  if (pending_join_.has_value()) return std::nullopt;  // RegroupInPlace joined the next one
  const WorkerFailure cause = rendezvous_->RemoteRootCause();
  if (rendezvous_->restart_requested()) {
    // Elastic: the membership line after the next join says what changed.
    if (!plan_.elastic) {
      Notice(absl::StrCat("restarting: attempt ", number + 1, " of ", config_.max_restarts + 1,
                          " (cause: ", DescribeCause(cause), ")"));
    }
    return std::nullopt;
  }
  NoticeBlock(absl::StrCat(
      FormatFailureReport({cause}, absl::StrCat(kLogPrefix, "job aborted, root cause:")),
      FormatHangNotes(attempt.hang_notes)));
  return rendezvous_->RemoteExitCode();
}

}  // namespace accel::launcher::internal
