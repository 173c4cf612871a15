#include "rendezvous/join/liveness.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"

namespace accel::rendezvous {

std::string ValidateLiveness(const LivenessOptions& o) {
  if (o.heartbeat_interval <= absl::ZeroDuration()) return "heartbeat_interval must be > 0";
  if (o.missed_heartbeats_probe < 1 || o.missed_heartbeats_lost < o.missed_heartbeats_probe) {
    return "need 1 <= missed_heartbeats_probe <= missed_heartbeats_lost";
  }
  if (o.probe_unanswered <= absl::ZeroDuration()) return "probe_unanswered must be > 0";
  if (o.silent_lost < o.lost_after()) return "silent_lost must be >= the heartbeat loss time";
  return "";
}

Liveness::Liveness(const LivenessOptions& options, absl::Time now, bool probed, std::string silence)
    : options_(options), probed_(probed), silence_(std::move(silence)), last_heartbeat_(now) {}

void Liveness::Heartbeat(absl::Time now) {
  last_heartbeat_ = std::max(last_heartbeat_, now);
  unanswered_since_ = absl::InfiniteFuture();
  unconfirmed_since_ = absl::InfiniteFuture();
}

void Liveness::ProbeResult(absl::Time started, bool answered, absl::Time now) {
  if (started < last_heartbeat_ || started < last_answer_) return;  // stale
  if (answered) {
    last_answer_ = std::max(last_answer_, now);
    unanswered_since_ = absl::InfiniteFuture();
    unconfirmed_since_ = absl::InfiniteFuture();
  } else if (options_.confirm_with_control) {
    unconfirmed_since_ = std::min(unconfirmed_since_, started);
  } else {
    unanswered_since_ = std::min(unanswered_since_, started);
  }
}

void Liveness::ControlAnswered(absl::Time control_started) {
  if (unconfirmed_since_ == absl::InfiniteFuture() ||
      control_started + absl::Milliseconds(100) < unconfirmed_since_) {
    return;
  }
  unanswered_since_ = std::min(unanswered_since_, unconfirmed_since_);
  unconfirmed_since_ = absl::InfiniteFuture();
}

bool Liveness::WantsProbe(absl::Time now) const {
  return probed_ && now - last_heartbeat_ >= options_.probe_after();
}

Liveness::Verdict Liveness::Check(absl::Time now) const {
  Verdict v;
  const absl::Duration silent = now - last_heartbeat_;
  const double seconds = absl::ToDoubleSeconds(silent);
  if (silent >= options_.silent_lost) {
    v.lost = true;
    v.why = probed_ ? absl::StrFormat(
                          "%s for %.1f s although its host answers (its launcher is stopped or "
                          "stuck)",
                          silence_, seconds)
                    : absl::StrFormat("%s for %.1f s", silence_, seconds);
    return v;
  }
  const absl::Time lost_at = last_heartbeat_ + options_.lost_after();
  if (!probed_) {
    if (now >= lost_at) {
      v.lost = true;
      v.why = absl::StrFormat("%s for %.1f s", silence_, seconds);
    } else {
      v.next = lost_at;
    }
    return v;
  }
  const absl::Time unanswered_at = unanswered_since_ + options_.probe_unanswered;
  if (now >= lost_at && now >= unanswered_at) {
    v.lost = true;
    v.why = absl::StrFormat(
        "%s for %.1f s and its host does not answer (no answer to probes for %.1f s)", silence_,
        seconds, absl::ToDoubleSeconds(now - unanswered_since_));
    return v;
  }
  // Until a probe result or a heartbeat arrives, the verdict changes at one of these moments.
  v.next = last_heartbeat_ + options_.silent_lost;
  const absl::Time probe_at = last_heartbeat_ + options_.probe_after();
  if (now < probe_at) v.next = std::min(v.next, probe_at);
  if (unanswered_since_ != absl::InfiniteFuture()) {
    v.next = std::min(v.next, std::max(lost_at, unanswered_at));
  }
  return v;
}

}  // namespace accel::rendezvous
