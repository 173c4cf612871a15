#include "launcher/process/hang_watch.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace accel::launcher {

HangWatch::HangWatch(HangWatchOptions options, JobProgress* job)
    : options_(std::move(options)),
      job_(job),
      detector_(options_.machine_rank, options_.host, options_.sample_tree,
                absl::FromChrono(defaults::kHangCpuWindow), defaults::kHangBusyCpuFraction,
                options_.startup_timeout) {}

HangWatch::Action HangWatch::Check(absl::Time now,
                                   const std::function<std::uint64_t(int)>& output_bytes) {
  detector_.Sample(now, output_bytes);
  const absl::Duration local_idle = detector_.IdleFor(now);
  const absl::Duration local_stalled = detector_.StalledFor(now);
  if (job_ != nullptr) {
    job_->Publish(detector_.Snapshots(now), local_idle, local_stalled, now);
  }
  switch (phase_) {
    case Phase::kWatching:
    case Phase::kSettling:
      // The job's verdict once settled, also one the other machines settled while this one saw
      // no hang (its launcher was starved of CPU, or its ranks looked active).
      if (std::optional<HangVerdict> settled = job_ != nullptr ? job_->Settled() : std::nullopt;
          settled.has_value()) {
        verdict_ = *std::move(settled);
        agreed_ = true;
        return Act(now);
      }
      if (phase_ == Phase::kSettling) {
        return now >= deadline_ ? Act(now) : Action::kNone;  // keep this machine's verdict
      }
      break;
    case Phase::kWaitingRemote:
      if (now < deadline_) return Action::kNone;
      phase_ = Phase::kDone;
      return Action::kEndRemote;
    case Phase::kDone:
      return Action::kNone;
  }
  absl::Duration idle = local_idle;
  absl::Duration stalled = local_stalled;
  if (job_ != nullptr) {
    idle = std::min(idle, job_->JobIdleFor(now));
    stalled = std::min(stalled, job_->JobStalledFor(now));
  }
  const bool idle_hang = idle >= options_.hang_timeout;
  if (!idle_hang && stalled < options_.hang_timeout) {
    return Action::kNone;
  }
  std::vector<RankSnapshot> ranks = detector_.Snapshots(now);
  if (job_ != nullptr) {
    for (RankSnapshot& other : job_->OtherRanks(now)) ranks.push_back(std::move(other));
  }
  if (ranks.empty() || (!idle_hang && !StalledInCollective(ranks))) {
    return Action::kNone;
  }
  verdict_ = idle_hang ? DiagnoseHang(ranks, idle) : DiagnoseHang(ranks, stalled, /*busy=*/true);
  if (job_ == nullptr) {
    agreed_ = true;
    return Act(now);
  }
  job_->Propose(verdict_);
  phase_ = Phase::kSettling;
  // An inference from this machine's copies waits as long as the exchange does for the reports
  // that may show a stopped process (a starved launcher's), before acting on its own.
  deadline_ = now + options_.settle_timeout +
              (verdict_.inferred ? options_.hang_timeout : absl::ZeroDuration());
  return Action::kNone;
}

void HangWatch::Regroup(const std::map<int, int>& renumbered, JobProgress* job) {
  detector_.Renumber(renumbered);
  job_ = job;
  phase_ = Phase::kWatching;
  deadline_ = absl::InfiniteFuture();
  verdict_ = HangVerdict{};
  agreed_ = false;
}

HangWatch::Action HangWatch::Act(absl::Time now) {
  if (verdict_.machine_rank == options_.machine_rank) {
    phase_ = Phase::kDone;
    return Action::kEndLocal;
  }
  phase_ = Phase::kWaitingRemote;
  deadline_ = now + options_.remote_wait;
  return Action::kWaitRemote;
}

}  // namespace accel::launcher
