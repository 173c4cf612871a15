#include "launcher/agent/progress_exchange.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace accel::launcher {
namespace {

constexpr char kActivityKey[] = "accel-launch/activity";
constexpr char kVerdictKey[] = "accel-launch/hang-verdict";
constexpr char kReportsKey[] = "accel-launch/hang-reports";
// How often a proposal polls for the other machines' reports.
constexpr absl::Duration kCollectPoll = absl::Milliseconds(50);
// What an advance adds to the activity counter; an activity adds 1 (header).
constexpr std::int64_t kAdvancedUnit = std::int64_t{1} << 32;

std::string ProgressKey(int machine_rank) {
  return absl::StrCat("accel-launch/progress/", machine_rank);
}

std::string ReportKey(int machine_rank) {
  return absl::StrCat("accel-launch/hang-report/", machine_rank);
}

}  // namespace

ProgressExchange::ProgressExchange(std::unique_ptr<rendezvous::Store> store,
                                   ExchangeOptions options)
    : store_(std::move(store)),
      options_(options),
      activity_changed_(absl::Now()),
      advanced_changed_(activity_changed_) {
  thread_ = std::thread([this] { Run(); });
}

ProgressExchange::~ProgressExchange() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void ProgressExchange::Publish(std::vector<RankSnapshot> ranks, absl::Duration idle_for,
                               absl::Duration stalled_for, absl::Time now) {
  absl::MutexLock lock(&mu_);
  own_ = std::move(ranks);
  own_sampled_ = now;
  if (idle_for != absl::InfiniteDuration()) own_active_ = std::max(own_active_, now - idle_for);
  if (stalled_for != absl::InfiniteDuration()) {
    own_advanced_ = std::max(own_advanced_, now - stalled_for);
  }
}

absl::Duration ProgressExchange::JobIdleFor(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  if (now - read_ok_ > 3 * options_.interval) {
    return absl::ZeroDuration();  // the store did not answer lately: assume the job is active
  }
  return std::max(absl::ZeroDuration(), now - activity_changed_);
}

absl::Duration ProgressExchange::JobStalledFor(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  if (now - read_ok_ > 3 * options_.interval) return absl::ZeroDuration();
  return std::max(absl::ZeroDuration(), now - advanced_changed_);
}

std::vector<RankSnapshot> ProgressExchange::OtherRanks(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  return OthersLocked(now);
}

std::vector<RankSnapshot> ProgressExchange::OthersLocked(absl::Time now) const {
  std::vector<RankSnapshot> out;
  for (const auto& [machine, remote] : others_) {
    for (RankSnapshot r : remote.ranks) {
      r.idle_for += now - remote.read;
      r.stalled_for += now - remote.read;
      out.push_back(std::move(r));
    }
  }
  return out;
}

void ProgressExchange::Propose(const HangVerdict& verdict) {
  absl::MutexLock lock(&mu_);
  if (proposal_.has_value()) return;
  proposal_ = verdict;
  proposal_new_ = true;
  report_from_ = std::min(report_from_, own_sampled_);  // HangWatch published, then proposed
}

std::optional<HangVerdict> ProgressExchange::Settled() const {
  absl::MutexLock lock(&mu_);
  return settled_;
}

void ProgressExchange::Run() {
  absl::Time next_period = absl::Now();
  for (;;) {
    bool collecting = false;
    bool settled = false;
    {
      absl::MutexLock lock(&mu_);
      auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || proposal_new_; };
      const bool busy = (round_seen_ || proposal_.has_value()) && !settled_.has_value();
      const absl::Duration wait = next_period - absl::Now();
      mu_.AwaitWithTimeout(absl::Condition(&wake), busy ? std::min(wait, kCollectPoll) : wait);
      if (stop_) return;
      proposal_new_ = false;
      collecting = proposal_.has_value() && !settled_.has_value();
      settled = settled_.has_value();
    }
    if (absl::Now() >= next_period) {
      Exchange();
      next_period = absl::Now() + options_.interval;
    }
    if (collecting && proposed_at_ == absl::InfiniteFuture()) {
      proposed_at_ = absl::Now();
      round_seen_ = true;
    }
    if (!round_seen_ || settled || Stopping()) continue;
    Report();
    if (collecting) {
      SettleVerdict();
    } else if (reported_ && !Stopping()) {
      ReadVerdict();
    }
  }
}

bool ProgressExchange::Stopping() const {
  absl::MutexLock lock(&mu_);
  return stop_;
}

void ProgressExchange::Exchange() {
  PublishOwn();
  if (Stopping()) return;
  ReadActivity();
  bool suspect = false;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    suspect =
        std::max(now - activity_changed_, now - advanced_changed_) >= options_.hang_timeout / 2;
  }
  if (suspect) ReadOthers();
  // Read every period, suspect or not: a machine whose launcher was starved may see the activity
  // counter move on and the job as active, but must still report (one small call per period).
  if (round_seen_ || Stopping()) return;
  absl::StatusOr<std::string> reports = store_->Get(kReportsKey, absl::ZeroDuration());
  std::int64_t count = 0;
  if (!reports.ok() || !absl::SimpleAtoi(*reports, &count) || count <= 0) return;
  round_seen_ = true;  // Run reports once the supervisor published a sample taken from now on
  absl::MutexLock lock(&mu_);
  report_from_ = std::min(report_from_, absl::Now());
}

void ProgressExchange::PublishOwn() {
  std::vector<RankSnapshot> own;
  absl::Time active;
  absl::Time advanced;
  {
    absl::MutexLock lock(&mu_);
    own = own_;
    active = own_active_;
    advanced = own_advanced_;
  }
  std::int64_t add = 0;
  if (active > activity_added_) {
    activity_added_ = active;
    add += 1;
  }
  if (advanced > advanced_added_) {
    advanced_added_ = advanced;
    add += kAdvancedUnit;
  }
  if (add != 0) (void)store_->Add(kActivityKey, add);  // a failure shows in ReadActivity
  (void)store_->Set(ProgressKey(options_.machine_rank), EncodeSnapshots(own));
}

void ProgressExchange::ReadActivity() {
  absl::StatusOr<std::string> value = store_->Get(kActivityKey, absl::ZeroDuration());
  const absl::Time now = absl::Now();
  if (!value.ok() && !absl::IsNotFound(value.status())) {
    return;  // JobIdleFor reads "active" once read_ok_ is old
  }
  std::int64_t seen = 0;  // absent: nothing added yet
  if (value.ok() && !absl::SimpleAtoi(*value, &seen)) return;
  absl::MutexLock lock(&mu_);
  read_ok_ = now;
  if (!activity_seen_.has_value() ||
      (*activity_seen_ & (kAdvancedUnit - 1)) != (seen & (kAdvancedUnit - 1))) {
    activity_changed_ = now;
  }
  if (!activity_seen_.has_value() || *activity_seen_ / kAdvancedUnit != seen / kAdvancedUnit) {
    advanced_changed_ = now;
  }
  activity_seen_ = seen;
}

void ProgressExchange::ReadOthers() {
  for (int machine = 0; machine < options_.num_machines && !Stopping(); ++machine) {
    if (machine == options_.machine_rank) continue;
    absl::StatusOr<std::string> value = store_->Get(ProgressKey(machine), absl::ZeroDuration());
    if (!value.ok()) continue;
    std::optional<std::vector<RankSnapshot>> ranks = DecodeSnapshots(*value);
    if (!ranks.has_value()) continue;
    absl::MutexLock lock(&mu_);
    others_[machine] = Remote{*std::move(ranks), absl::Now()};
  }
}

void ProgressExchange::Report() {
  if (reported_) return;
  std::vector<RankSnapshot> own;
  {
    absl::MutexLock lock(&mu_);
    if (own_sampled_ < report_from_) return;
    own = own_;
  }
  if (!store_->Set(ReportKey(options_.machine_rank), EncodeSnapshots(own)).ok()) return;
  reported_ = true;
  reports_[options_.machine_rank] = std::move(own);
  (void)store_->Add(kReportsKey, 1);  // a failure: the others find the hang themselves
}

void ProgressExchange::ReadVerdict() {
  absl::StatusOr<std::string> value = store_->Get(kVerdictKey, absl::ZeroDuration());
  if (!value.ok()) return;
  std::optional<HangVerdict> verdict = DecodeVerdict(*value);
  if (!verdict.has_value()) return;
  absl::MutexLock lock(&mu_);
  settled_ = std::move(verdict);
}

void ProgressExchange::SettleVerdict() {
  const absl::Time now = absl::Now();
  const bool late = now >= proposed_at_ + options_.report_wait;
  // A verdict inferred from idle times while a machine's report is missing waits longer: that
  // machine's launcher may be starved, and its report is the one that can show a stopped process.
  const bool last_chance = now >= proposed_at_ + options_.report_wait + options_.hang_timeout;
  // The counter says when there are reports to read, so waiting costs one call per poll.
  std::int64_t counted = 0;
  absl::StatusOr<std::string> count = store_->Get(kReportsKey, absl::ZeroDuration());
  if (count.ok() && !absl::SimpleAtoi(*count, &counted)) counted = 0;
  for (int machine = 0; machine < options_.num_machines && !Stopping(); ++machine) {
    if (!late && counted <= static_cast<std::int64_t>(reports_.size())) break;
    if (reports_.count(machine) != 0) continue;
    absl::StatusOr<std::string> value = store_->Get(ReportKey(machine), absl::ZeroDuration());
    if (!value.ok()) continue;
    std::optional<std::vector<RankSnapshot>> ranks = DecodeSnapshots(*value);
    if (ranks.has_value()) reports_[machine] = *std::move(ranks);
  }
  if (Stopping()) return;
  const bool complete = static_cast<int>(reports_.size()) >= options_.num_machines;
  std::optional<std::string> stored;
  if (!complete && !late) {
    // Another machine may have decided already: adopt its verdict rather than wait.
    absl::StatusOr<std::string> value = store_->Get(kVerdictKey, absl::ZeroDuration());
    if (!value.ok()) return;
    stored = *std::move(value);
  } else {
    HangVerdict decided;
    {
      absl::MutexLock lock(&mu_);
      std::vector<RankSnapshot> last_read = OthersLocked(absl::Now());
      last_read.insert(last_read.end(), own_.begin(), own_.end());
      decided = DecideJobVerdict(reports_, last_read, proposal_->job_idle_for, proposal_->busy);
    }
    if (!complete && !last_chance && !decided.stopped) {
      // Only a stop seen in a copy is worth deciding on without every report; otherwise adopt a
      // verdict another machine decided, or wait for the missing reports.
      absl::StatusOr<std::string> value = store_->Get(kVerdictKey, absl::ZeroDuration());
      if (!value.ok()) return;
      std::optional<HangVerdict> verdict = DecodeVerdict(*value);
      if (!verdict.has_value()) return;
      absl::MutexLock lock(&mu_);
      settled_ = std::move(verdict);
      return;
    }
    absl::StatusOr<std::string> value = store_->CompareSet(kVerdictKey, "", EncodeVerdict(decided));
    if (!value.ok()) return;  // tried again next poll; HangWatch's settle timeout bounds it
    stored = *std::move(value);
  }
  std::optional<HangVerdict> verdict = DecodeVerdict(*stored);
  if (!verdict.has_value()) return;
  absl::MutexLock lock(&mu_);
  settled_ = std::move(verdict);
}

}  // namespace accel::launcher
