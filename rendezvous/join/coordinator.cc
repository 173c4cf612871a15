#include "rendezvous/join/coordinator.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/absl_view.h"
#include "common/random.h"
#include "rendezvous/join/result.h"
#include "rendezvous/join/types.h"

namespace accel::rendezvous {
namespace {

absl::Status Unavailable() { return absl::UnavailableError("rendezvous server: shutting down"); }

constexpr std::size_t kMaxRefusals = 4;  // refusals kept per attempt (anyone can send them)

// Returns `text` cut to 64 bytes with anything unprintable as '?' (it comes from a stranger).
std::string Printable(std::string_view text) {
  std::string out(text.substr(0, 64));
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

}  // namespace

JoinCoordinator::JoinCoordinator(ServerOptions options, Hooks hooks)
    : options_(std::move(options)), hooks_(std::move(hooks)) {}

void JoinCoordinator::Deliver(Outbox& out) const {
  if (out.completion.has_value()) {
    Completion& c = *out.completion;
    std::vector<const JoinedMachine*> machines;
    for (const JoinedMachine& m : c.machines) machines.push_back(&m);
    absl::StatusOr<std::vector<v1::JoinResponse>> responses = BuildJoinResponses(machines, c.info);
    for (std::size_t i = 0; i < c.dones.size(); ++i) {
      if (responses.ok()) {
        (*responses)[i].set_machine_secret(c.secrets[i]);
        c.dones[i](std::move((*responses)[i]));
      } else {
        c.dones[i](responses.status());  // not reached: CompleteLocked checked the world size
      }
    }
  }
  for (auto& [done, result] : out.joins) done(std::move(result));
  for (auto& [sink, event] : out.events) sink->Send(event);
  for (auto& [sink, status] : out.closes) sink->Close(status);
  if (hooks_.attempt_over) {
    for (const std::string& ns : out.over) hooks_.attempt_over(ns);
  }
}

std::string JoinCoordinator::ReferenceLocked() const {
  auto it = pending_.find(0);
  if (it != pending_.end()) return DescribeMachine(it->second.machine);
  auto member = members_.find(0);
  if (member != members_.end()) return DescribeMachine(member->second.machine);
  return "the rendezvous server";
}

absl::Status JoinCoordinator::CheckLocked(const JoinedMachine& machine, const std::string& nonce,
                                          int* differing) {
  *differing = -1;
  if (absl::Status s = CheckAgainstServer(machine, options_, ReferenceLocked()); !s.ok()) return s;
  if (absl::Status s = CheckRequestShape(machine.request, options_); !s.ok()) return s;
  const int rank = machine.request.machine_rank();
  auto member = members_.find(rank);
  if (member != members_.end()) {
    if (!nonce.empty() && member->second.machine.request.agent_nonce() == nonce) {
      return absl::FailedPreconditionError(
          absl::StrCat("join rendezvous run_id=", options_.run_id, ": ", DescribeMachine(machine),
                       " already joined attempt ", attempt_, ", which is under way"));
    }
    return DuplicateRankError(machine, member->second.machine, options_.run_id);
  }
  auto pending = pending_.find(rank);
  if (pending != pending_.end() &&
      (nonce.empty() || pending->second.machine.request.agent_nonce() != nonce)) {
    return DuplicateRankError(machine, pending->second.machine, options_.run_id);
  }
  // Compares with machine 0 when it is here, else with the lowest machine rank waiting.
  const JoinedMachine* peer = nullptr;
  for (const auto& [other_rank, other] : pending_) {
    if (other_rank != rank) {
      peer = &other.machine;
      break;
    }
  }
  // Elastic: a machine joining a running generation is checked against machine 0's config.
  if (peer == nullptr && !members_.empty()) peer = &members_.begin()->second.machine;
  if (peer == nullptr) return absl::OkStatus();
  // Machine 0's config is the job's: when machine 0 is the one joining, a difference is the
  // waiting machine's, described from its side as in the other order.
  const bool joining_is_reference = rank == 0;
  std::vector<std::string> warnings;
  absl::Status status =
      joining_is_reference
          ? CheckAgainstPeer(*peer, machine, options_.run_id, options_.strict, warnings)
          : CheckAgainstPeer(machine, *peer, options_.run_id, options_.strict, warnings);
  if (status.ok()) {
    warnings_.insert(warnings_.end(), warnings.begin(), warnings.end());
  } else if (joining_is_reference) {
    *differing = peer->request.machine_rank();
  }
  return status;
}

JoinCoordinator::Id JoinCoordinator::Join(const v1::JoinRequest& request, std::string_view peer,
                                          absl::Time now, JoinDone done) {
  Outbox out;
  Id id = 0;
  {
    absl::MutexLock lock(&mu_);
    JoinedMachine machine{request,
                          request.addresses_size() > 0 ? request.addresses(0) : PeerHost(peer)};
    absl::Status status;
    if (shut_down_) {
      status = Unavailable();
    } else if (phase_ == Phase::kAborted) {
      status =
          absl::AbortedError(absl::StrCat("join rendezvous run_id=", options_.run_id, ": attempt ",
                                          attempt_, " was aborted: ", root_cause_.message()));
    } else if (phase_ == Phase::kDone) {
      status = absl::FailedPreconditionError(
          absl::StrCat("join rendezvous run_id=", options_.run_id, ": the run has finished"));
    } else {
      int differing = -1;
      status = CheckLocked(machine, request.agent_nonce(), &differing);
      if (differing >= 0) {
        // Machine 0 joined after a machine whose config differs from its own: that machine is
        // refused, and machine 0 and the others waiting hear why, as in the other order.
        auto odd = pending_.find(differing);
        const absl::Status refused = RefusedPeerError(odd->second.machine, status, options_.run_id);
        out.joins.emplace_back(std::move(odd->second.done), status);
        pending_.erase(odd);
        FailPendingLocked(refused, out);
        status = refused;
      } else if ((absl::IsFailedPrecondition(status) || absl::IsInvalidArgument(status)) &&
                 phase_ == Phase::kJoining && !pending_.empty()) {
        // A machine with the job's token was refused: this attempt cannot complete, and the
        // machines waiting in it learn why now instead of at rdzv_timeout.
        FailPendingLocked(RefusedPeerError(machine, status, options_.run_id), out);
      }
    }
    if (!status.ok()) {
      out.joins.emplace_back(std::move(done), status);
    } else {
      const int rank = request.machine_rank();
      auto previous = pending_.find(rank);
      if (previous != pending_.end()) {  // the same agent retried: the new call replaces it
        out.joins.emplace_back(std::move(previous->second.done),
                               absl::AbortedError("join rendezvous: replaced by a retried join"));
        pending_.erase(previous);
      }
      if (pending_.empty()) first_join_ = now;
      id = next_id_++;
      pending_[rank] = Pending{std::move(machine), id, std::move(done)};
      if (ElasticLocked()) {
        if (phase_ == Phase::kRunning) ScaleUpLocked(pending_[rank].machine, out);
        if (static_cast<int>(pending_.size()) >= options_.elastic.min_machines &&
            min_reached_ == absl::InfiniteFuture()) {
          min_reached_ = now;
        }
        MaybeCompleteLocked(now, out);
        if (pending_.count(rank) == 0) id = 0;
      } else if (static_cast<int>(pending_.size()) == options_.num_machines) {
        CompleteLocked(now, out);
        id = 0;
      }
    }
  }
  Deliver(out);
  return id;
}

void JoinCoordinator::CompleteLocked(absl::Time now, Outbox& out) {
  absl::StatusOr<int> master_port =
      hooks_.pick_master_port ? hooks_.pick_master_port() : absl::StatusOr<int>(0);
  if (!master_port.ok()) {
    FailPendingLocked(
        absl::Status(master_port.status().code(),
                     absl::StrCat("join rendezvous run_id=", options_.run_id,
                                  ": reserve MASTER_PORT: ", master_port.status().message())),
        out);
    return;
  }
  std::vector<const JoinedMachine*> machines;
  for (const auto& [rank, pending] : pending_) machines.push_back(&pending.machine);
  AttemptInfo info{options_.run_id,
                   attempt_,
                   ElasticLocked() ? 0 : options_.num_processes,  // elastic: the world varies
                   hooks_.advertise_host,
                   *master_port,
                   hooks_.store_port ? hooks_.store_port() : 0,
                   warnings_,
                   restarts_,
                   "",
                   false};
  if (absl::Status status = CheckWorldSize(machines, info); !status.ok()) {
    FailPendingLocked(status, out);
    return;
  }
  std::vector<std::string> secrets;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    absl::StatusOr<std::string> secret = RandomHex(16);
    if (!secret.ok()) {
      FailPendingLocked(absl::UnavailableError(
                            absl::StrCat("join rendezvous run_id=", options_.run_id,
                                         ": make machine secrets: ", secret.status().message())),
                        out);
      return;
    }
    secrets.push_back(*std::move(secret));
  }
  Completion& completion = out.completion.emplace();
  completion.secrets = secrets;
  members_.clear();
  std::size_t i = 0;
  for (auto& [rank, pending] : pending_) {
    completion.machines.push_back(pending.machine);
    completion.dones.push_back(std::move(pending.done));
    const bool probed = pending.machine.request.probe_port() > 0;
    members_.emplace(
        rank, Member{std::move(pending.machine), Liveness(options_.liveness, now, probed), false, 0,
                     nullptr, false, secrets[i++]});
  }
  info.membership = NoteMembersLocked(completion.machines, &info.continues);
  completion.info = std::move(info);
  pending_.clear();
  warnings_.clear();
  refusals_.clear();
  first_join_ = absl::InfiniteFuture();
  phase_ = Phase::kRunning;
}

void JoinCoordinator::FailPendingLocked(const absl::Status& status, Outbox& out) {
  for (auto& [rank, pending] : pending_) out.joins.emplace_back(std::move(pending.done), status);
  pending_.clear();
  warnings_.clear();
  refusals_.clear();
  first_join_ = absl::InfiniteFuture();
  min_reached_ = absl::InfiniteFuture();
}

bool JoinCoordinator::NoteRefusedJoin(const v1::JoinRequest& request, std::string_view peer,
                                      std::string_view why) {
  absl::MutexLock lock(&mu_);
  if (shut_down_ || phase_ != Phase::kJoining || refusals_.size() >= kMaxRefusals) return false;
  const std::string prefix = absl::StrCat(Av(peer), ": ");
  if (const std::size_t at = why.find(prefix); at != std::string_view::npos) {
    why.remove_prefix(at + prefix.size());
  }
  std::string line =
      absl::StrCat("a join claiming machine_rank ", request.machine_rank(), " (host ",
                   Printable(request.hostname()), ") from ", PeerHost(peer), ": ", Av(why));
  if (std::find(refusals_.begin(), refusals_.end(), line) != refusals_.end()) return false;
  refusals_.push_back(std::move(line));
  return true;
}

void JoinCoordinator::CancelJoin(Id id) {
  Outbox out;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->second.id != id) continue;
      out.joins.emplace_back(std::move(it->second.done),
                             absl::CancelledError("join rendezvous: cancelled by the client"));
      pending_.erase(it);
      if (pending_.empty()) first_join_ = absl::InfiniteFuture();
      if (static_cast<int>(pending_.size()) < options_.elastic.min_machines) {
        min_reached_ = absl::InfiniteFuture();
      }
      break;
    }
  }
  Deliver(out);
}

absl::Status JoinCoordinator::CheckMemberLocked(std::string_view operation,
                                                const std::string& run_id, int machine_rank,
                                                std::int64_t attempt,
                                                const std::string& secret) const {
  if (shut_down_) return Unavailable();
  if (run_id != options_.run_id) {
    return absl::FailedPreconditionError(absl::StrCat(
        Av(operation), " run_id=", run_id, ": this server serves run_id=", options_.run_id));
  }
  if (attempt == attempt_ && phase_ != Phase::kJoining) {
    auto member = members_.find(machine_rank);
    if (member == members_.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          Av(operation), " machine_rank ", machine_rank, ": not a member of attempt ", attempt));
    }
    if (!SecretsMatch(member->second.secret, secret)) {
      return absl::PermissionDeniedError(absl::StrCat(
          Av(operation), " machine_rank ", machine_rank,
          ": the call does not carry that machine's secret (only its own agent, which joined "
          "attempt ",
          attempt, ", may speak for it)"));
    }
  }
  if (attempt > attempt_ || (attempt == attempt_ && phase_ == Phase::kJoining)) {
    return absl::FailedPreconditionError(
        absl::StrCat(Av(operation), " machine_rank ", machine_rank, ": attempt ", attempt,
                     " has not started (current attempt ", attempt_, ")"));
  }
  return absl::OkStatus();
}

absl::Time JoinCoordinator::Tick(absl::Time now) {
  Outbox out;
  absl::Time next = absl::InfiniteFuture();
  {
    absl::MutexLock lock(&mu_);
    if (ElasticLocked() && !pending_.empty()) next = MaybeCompleteLocked(now, out);
    if (!pending_.empty() && now >= first_join_ + options_.rdzv_timeout) {
      std::vector<const JoinedMachine*> arrived;
      std::vector<int> ranks;
      for (const auto& [rank, pending] : pending_) {
        arrived.push_back(&pending.machine);
        ranks.push_back(rank);
      }
      FailPendingLocked(
          ElasticLocked()
              ? BelowMinError(options_.run_id, attempt_, options_.elastic, options_.rdzv_timeout,
                              ranks, attempt_ > 0 ? restart_cause_.message() : "")
              : TimeoutError(options_.run_id, attempt_, options_.rdzv_timeout,
                             options_.num_machines, arrived, refusals_),
          out);
    }
    if (!pending_.empty()) next = std::min(next, first_join_ + options_.rdzv_timeout);
    if (phase_ == Phase::kRunning) {
      for (auto& [rank, member] : members_) {
        if (member.done) continue;
        const Liveness::Verdict verdict = member.liveness.Check(now);
        if (!verdict.lost) {
          next = std::min(next, verdict.next);
          continue;
        }
        LostLocked(rank, verdict.why, out);
        break;
      }
    }
  }
  Deliver(out);
  return next;
}

void JoinCoordinator::Shutdown() {
  Outbox out;
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    FailPendingLocked(Unavailable(), out);
    for (auto& [rank, member] : members_) {
      if (member.sink) out.closes.emplace_back(std::move(member.sink), Unavailable());
      member.watch_id = 0;
    }
  }
  Deliver(out);
}

}  // namespace accel::rendezvous
