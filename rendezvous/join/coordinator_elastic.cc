// JoinCoordinator, elastic membership: when a forming attempt (generation) completes, how a lost
// machine or a joining one ends the running attempt, and the job-wide restart budget
// (join/membership.h holds the rules; coordinator.cc joining, coordinator_attempt.cc running).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "rendezvous/join/coordinator.h"  // IWYU pragma: associated
#include "rendezvous/join/types.h"

namespace accel::rendezvous {

Forming JoinCoordinator::FormingLocked() const {
  Forming forming;
  forming.waiting = static_cast<int>(pending_.size());
  forming.survivors_expected = !survivors_.empty();
  forming.survivors_in =
      !survivors_.empty() && std::all_of(survivors_.begin(), survivors_.end(),
                                         [this](int rank) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                           return pending_.count(rank) != 0;
                                         });
  forming.min_reached = min_reached_;
  return forming;
}

absl::Time JoinCoordinator::MaybeCompleteLocked(absl::Time now, Outbox& out) {
  if (shut_down_ || phase_ != Phase::kJoining || pending_.empty()) return absl::InfiniteFuture();
  const absl::Time at = CompletesAt(options_.elastic, options_.num_machines, FormingLocked());
  if (at > now) return at;
  CompleteLocked(now, out);
  return absl::InfiniteFuture();
}

std::string JoinCoordinator::NoteMembersLocked(const std::vector<JoinedMachine>& machines,
                                               bool* continues) {
  std::map<int, std::string> now;
  bool kept = false;  // a machine of the previous attempt is in this one
  for (const JoinedMachine& m : machines) {
    now[m.request.machine_rank()] = m.request.hostname();
    kept = kept || previous_.count(m.request.machine_rank()) != 0;
  }
  *continues = attempt_ > 0 && continues_ && kept;
  continues_ = false;
  std::string change = attempt_ > 0 ? DescribeChange(previous_, now, why_left_) : "";
  previous_ = std::move(now);
  why_left_.clear();
  survivors_.clear();
  min_reached_ = absl::InfiniteFuture();
  return change;
}

void JoinCoordinator::RestartLocked(const v1::RootCause& cause, bool counted, bool continues,
                                    std::set<int> survivors, Outbox& out) {
  if (counted) ++restarts_;
  continues_ = continues;
  v1::Event event;
  event.set_kind(v1::Event::RESTART);
  event.set_attempt(attempt_ + 1);
  *event.mutable_root_cause() = cause;
  restart_cause_ = cause;
  EndLocked(Phase::kJoining, event, out);
  out.over.push_back(StoreNamespace(options_.run_id, attempt_));
  ++attempt_;
  members_.clear();
  survivors_ = std::move(survivors);
}

void JoinCoordinator::LostElasticLocked(int rank, v1::RootCause cause, std::string_view why,
                                        Outbox& out) {
  const bool any_done =
      std::any_of(members_.begin(), members_.end(), [](const auto& m) { return m.second.done; });
  if (rank == 0 || any_done) {
    // Machine 0 hosts the rendezvous (a standby is not built yet); a machine that finished
    // cannot train again.
    AbortLocked(cause, out);
    return;
  }
  if (restarts_ >= options_.elastic.max_restarts) {
    cause.set_message(
        BudgetSpentMessage(cause.message(), options_.elastic.max_restarts, restarts_));
    AbortLocked(cause, out);
    return;
  }
  std::set<int> survivors;
  for (const auto& [member_rank, member] : members_) {
    if (member_rank != rank) survivors.insert(member_rank);
  }
  why_left_[rank] = absl::StrCat("lost: ", Av(why));
  RestartLocked(cause, /*counted=*/true, /*continues=*/true, std::move(survivors), out);
}

void JoinCoordinator::HangLocked(int rank, v1::RootCause cause, Outbox& out) {
  if (restarts_ >= options_.elastic.max_restarts) {
    cause.set_message(
        BudgetSpentMessage(cause.message(), options_.elastic.max_restarts, restarts_));
    AbortLocked(cause, out);
    return;
  }
  std::set<int> everyone;
  for (const auto& [member_rank, member] : members_) everyone.insert(member_rank);
  if (!ElasticLocked() || rank == 0) {  // nobody can leave: the hung worker restarts with the rest
    RestartLocked(cause, /*counted=*/true, /*continues=*/false, std::move(everyone), out);
    return;
  }
  if (std::any_of(members_.begin(), members_.end(), [](const auto& m) { return m.second.done; })) {
    AbortLocked(cause, out);  // a machine that finished cannot train again
    return;
  }
  // Machine `rank` alone hears that it is evicted; the others restart without it.
  Member& evicted = members_.at(rank);
  if (evicted.sink) {
    v1::Event event;
    event.set_kind(v1::Event::ABORT);
    event.set_attempt(attempt_);
    event.set_evicted(true);
    *event.mutable_root_cause() = cause;
    out.events.emplace_back(std::move(evicted.sink), std::move(event));
  }
  evicted.told = true;
  evicted.watch_id = 0;
  everyone.erase(rank);
  // A failed worker's report (in-place jobs: its machine leaves) carries how it ended.
  const bool failed = cause.exit_code() != 0 || cause.signal() != 0;
  why_left_[rank] =
      failed ? absl::StrCat("evicted: its rank ", cause.rank(), " failed")
             : absl::StrCat("evicted: the job's hang verdict names its rank ", cause.rank());
  RestartLocked(cause, /*counted=*/true, /*continues=*/true, std::move(everyone), out);
}

void JoinCoordinator::ScaleUpLocked(const JoinedMachine& joiner, Outbox& out) {
  if (std::any_of(members_.begin(), members_.end(), [](const auto& m) { return m.second.done; })) {
    return;  // finishing: the joiner waits, and times out unless a new attempt forms
  }
  std::set<int> survivors;
  for (const auto& [rank, member] : members_) survivors.insert(rank);
  v1::RootCause cause;
  cause.set_machine_rank(joiner.request.machine_rank());
  cause.set_hostname(joiner.request.hostname());
  cause.set_rank(-1);
  cause.set_message(absl::StrCat(
      NameMachine(joiner.request.machine_rank(), joiner.request.hostname()), " joined"));
  RestartLocked(cause, /*counted=*/false, /*continues=*/true, std::move(survivors), out);
}

}  // namespace accel::rendezvous
