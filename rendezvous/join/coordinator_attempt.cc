// JoinCoordinator, a running attempt: watches, heartbeats, reports, how the attempt ends and
// who has been told (coordinator.cc holds joining, the timer and shutdown).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "rendezvous/join/coordinator.h"  // IWYU pragma: associated
#include "rendezvous/join/types.h"

namespace accel::rendezvous {
namespace {

// Returns "(host H, address A)" of `machine`.
std::string Where(const JoinedMachine& machine) {
  return absl::StrCat("(host ",
                      machine.request.hostname().empty() ? "?" : machine.request.hostname(),
                      ", address ", machine.address.empty() ? "?" : machine.address, ")");
}

}  // namespace

v1::Event JoinCoordinator::TerminalEventLocked() const {
  v1::Event event;
  event.set_attempt(attempt_);
  if (phase_ == Phase::kAborted) {
    event.set_kind(v1::Event::ABORT);
    *event.mutable_root_cause() = root_cause_;
  } else {
    event.set_kind(v1::Event::DONE);
  }
  return event;
}

absl::StatusOr<JoinCoordinator::Id> JoinCoordinator::Watch(const v1::WatchRequest& request,
                                                           std::shared_ptr<EventSink> sink) {
  Outbox out;
  Id id = 0;
  {
    absl::MutexLock lock(&mu_);
    absl::Status status =
        CheckMemberLocked("watch rendezvous", request.run_id(), request.machine_rank(),
                          request.attempt(), request.machine_secret());
    if (!status.ok()) return status;
    if (request.attempt() < attempt_) {
      v1::Event event;
      event.set_kind(v1::Event::RESTART);
      event.set_attempt(attempt_);
      *event.mutable_root_cause() = restart_cause_;
      out.events.emplace_back(std::move(sink), std::move(event));
    } else if (phase_ != Phase::kRunning) {
      out.events.emplace_back(std::move(sink), TerminalEventLocked());
      if (auto it = members_.find(request.machine_rank()); it != members_.end()) {
        it->second.told = true;
      }
    } else {
      Member& member = members_.at(request.machine_rank());
      if (member.sink)
        out.closes.emplace_back(std::move(member.sink),
                                absl::AbortedError("watch rendezvous: replaced by a new watch"));
      id = next_id_++;
      member.watch_id = id;
      member.sink = std::move(sink);
    }
  }
  Deliver(out);
  return id;
}

void JoinCoordinator::EndLocked(Phase phase, const v1::Event& event, Outbox& out) {
  phase_ = phase;
  for (auto& [rank, member] : members_) {
    if (member.sink) {
      out.events.emplace_back(std::move(member.sink), event);
      member.told = true;
    }
    member.watch_id = 0;
  }
}

void JoinCoordinator::AbortLocked(const v1::RootCause& cause, Outbox& out) {
  root_cause_ = cause;
  phase_ = Phase::kAborted;
  EndLocked(Phase::kAborted, TerminalEventLocked(), out);
}

void JoinCoordinator::LostLocked(int rank, std::string_view why, Outbox& out) {
  const Member& member = members_.at(rank);
  v1::RootCause cause;
  cause.set_machine_rank(rank);
  cause.set_hostname(member.machine.request.hostname());
  cause.set_rank(-1);
  cause.set_message(absl::StrCat("machine ", rank, " lost: ", Av(why), " ", Where(member.machine)));
  if (ElasticLocked()) {
    LostElasticLocked(rank, std::move(cause), why, out);
    return;
  }
  AbortLocked(cause, out);
}

void JoinCoordinator::WatchBroken(Id id, absl::Time /*now*/) {
  Outbox out;
  {
    absl::MutexLock lock(&mu_);
    if (phase_ != Phase::kRunning || id == 0) return;
    for (auto& [rank, member] : members_) {
      if (member.watch_id != id) continue;
      member.watch_id = 0;
      member.sink = nullptr;
      if (member.done) {
        member.told = true;  // it finished and left: nothing is owed to it
        break;
      }
      LostLocked(rank, "its connection to the rendezvous server closed", out);
      break;
    }
  }
  Deliver(out);
}

absl::Status JoinCoordinator::Heartbeat(const v1::HeartbeatRequest& request, absl::Time now) {
  absl::MutexLock lock(&mu_);
  absl::Status status = CheckMemberLocked("heartbeat", request.run_id(), request.machine_rank(),
                                          request.attempt(), request.machine_secret());
  if (!status.ok()) return status;
  if (request.attempt() == attempt_ && phase_ == Phase::kRunning) {
    members_.at(request.machine_rank()).liveness.Heartbeat(now);
  }
  return absl::OkStatus();
}

std::vector<ProbeTarget> JoinCoordinator::ProbeTargets(absl::Time now) {
  std::vector<ProbeTarget> targets;
  absl::MutexLock lock(&mu_);
  if (shut_down_ || phase_ != Phase::kRunning) return targets;
  for (const auto& [rank, member] : members_) {
    if (member.done || !member.liveness.WantsProbe(now)) continue;
    targets.push_back(
        ProbeTarget{rank, member.machine.address, member.machine.request.probe_port()});
  }
  return targets;
}

void JoinCoordinator::ControlResult(absl::Time started, bool answered, absl::Time now) {
  if (!answered) return;
  Outbox out;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_ || phase_ != Phase::kRunning) return;
    for (auto& [rank, member] : members_) {
      if (member.done) continue;
      member.liveness.ControlAnswered(started);
      const Liveness::Verdict verdict = member.liveness.Check(now);
      if (verdict.lost) {
        LostLocked(rank, verdict.why, out);
        break;
      }
    }
  }
  Deliver(out);
}

void JoinCoordinator::ProbeResult(int machine_rank, absl::Time started, bool answered,
                                  absl::Time now) {
  Outbox out;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_ || phase_ != Phase::kRunning) return;
    auto it = members_.find(machine_rank);
    if (it == members_.end() || it->second.done) return;
    it->second.liveness.ProbeResult(started, answered, now);
    const Liveness::Verdict verdict = it->second.liveness.Check(now);
    if (verdict.lost) LostLocked(machine_rank, verdict.why, out);
  }
  Deliver(out);
}

absl::Status JoinCoordinator::Report(const v1::ReportRequest& request, absl::Time /*now*/) {
  Outbox out;
  {
    absl::MutexLock lock(&mu_);
    absl::Status status =
        CheckMemberLocked("report to rendezvous", request.run_id(), request.machine_rank(),
                          request.attempt(), request.machine_secret());
    if (!status.ok()) return status;
    if (request.attempt() < attempt_) return absl::OkStatus();  // already restarted
    // An attempt that ended stays ended: a RESTART or HANG report after the abort (or the end)
    // would start an attempt that waits rdzv_timeout for machines that have already exited.
    // A later FAILURE or DONE changes nothing either (the first failure is the root cause).
    if (phase_ == Phase::kAborted || phase_ == Phase::kDone) {
      if (request.kind() != v1::ReportRequest::RESTART &&
          request.kind() != v1::ReportRequest::HANG) {
        return absl::OkStatus();
      }
      return absl::FailedPreconditionError(
          absl::StrCat("report to rendezvous: attempt ", attempt_, " already ",
                       phase_ == Phase::kDone ? "finished" : "aborted", ": nothing to restart"));
    }
    // A machine reports about itself only (its secret was checked above).
    v1::RootCause cause = request.cause();
    cause.set_machine_rank(request.machine_rank());
    switch (request.kind()) {
      case v1::ReportRequest::FAILURE:
        if (phase_ == Phase::kRunning) AbortLocked(cause, out);
        break;
      case v1::ReportRequest::DONE: {
        if (phase_ != Phase::kRunning) break;
        members_.at(request.machine_rank()).done = true;
        const bool all_done = std::all_of(members_.begin(), members_.end(),
                                          [](const auto& m) { return m.second.done; });
        if (all_done) {
          phase_ = Phase::kDone;
          EndLocked(Phase::kDone, TerminalEventLocked(), out);
        }
        break;
      }
      case v1::ReportRequest::RESTART: {
        if (phase_ == Phase::kDone) break;
        std::set<int> survivors;  // every machine: a failed worker's machine comes back
        for (const auto& [rank, member] : members_) survivors.insert(rank);
        RestartLocked(cause, /*counted=*/true, /*continues=*/false, std::move(survivors), out);
        break;
      }
      case v1::ReportRequest::HANG:
        if (phase_ == Phase::kRunning) HangLocked(request.machine_rank(), std::move(cause), out);
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("report to rendezvous: unknown kind ", request.kind()));
    }
  }
  Deliver(out);
  return absl::OkStatus();
}

bool JoinCoordinator::NobodyOwedLocked() const {
  if (phase_ != Phase::kDone && phase_ != Phase::kAborted) return true;
  for (const auto& [rank, member] : members_) {
    const bool lost_cause =
        phase_ == Phase::kAborted && root_cause_.rank() == -1 && root_cause_.machine_rank() == rank;
    if (!member.told && !lost_cause) return false;
  }
  return true;
}

bool JoinCoordinator::AwaitTerminalSent(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithDeadline(absl::Condition(this, &JoinCoordinator::NobodyOwedLocked), deadline);
}

}  // namespace accel::rendezvous
