// Liveness: busy (silent, host answers) is never lost before silent_lost; cut off (silent, host
// unanswering) is lost at max(lost_after, first unanswered attempt + probe_unanswered); Check's
// `next` is exact. Random heartbeat and probe histories are checked against a reference that
// replays the rules from the whole history.
#include "rendezvous/join/liveness.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'000'000);
absl::Time At(double seconds) { return kT0 + absl::Seconds(seconds); }

// The rules without the control: every unanswered attempt counts at once.
LivenessOptions Unconfirmed() {
  LivenessOptions o;
  o.confirm_with_control = false;
  return o;
}

TEST(LivenessTest, UnprobedPeerIsLostAfterTheMissedHeartbeats) {
  Liveness l(LivenessOptions{}, kT0, /*probed=*/false);
  EXPECT_FALSE(l.Check(At(2.999)).lost);
  EXPECT_EQ(l.Check(At(1)).next, At(3));
  EXPECT_FALSE(l.WantsProbe(At(2)));
  const Liveness::Verdict v = l.Check(At(3));
  EXPECT_TRUE(v.lost);
  EXPECT_EQ(v.why, "no heartbeat for 3.0 s");
}

TEST(LivenessTest, BusyPeerWhoseHostAnswersIsLostOnlyAfterSilentLost) {
  Liveness l(LivenessOptions{}, kT0, /*probed=*/true);
  EXPECT_FALSE(l.WantsProbe(At(1.49)));
  EXPECT_TRUE(l.WantsProbe(At(1.5)));
  for (double t = 1.5; t < 30; t += 0.5) {
    l.ProbeResult(At(t), /*answered=*/true, At(t + 0.001));
    EXPECT_FALSE(l.Check(At(t + 0.4)).lost) << t;
  }
  const Liveness::Verdict v = l.Check(At(30));
  EXPECT_TRUE(v.lost);
  EXPECT_THAT(v.why, HasSubstr("no heartbeat for 30.0 s although its host answers"));
}

TEST(LivenessTest, CutOffPeerIsLostAtTheHeartbeatLimit) {
  Liveness l(Unconfirmed(), kT0, /*probed=*/true);
  l.ProbeResult(At(1.5), false, At(2.0));
  l.ProbeResult(At(2.0), false, At(2.5));
  EXPECT_FALSE(l.Check(At(2.99)).lost);
  EXPECT_EQ(l.Check(At(2.5)).next, At(3));
  const Liveness::Verdict v = l.Check(At(3));
  EXPECT_TRUE(v.lost);
  EXPECT_EQ(v.why,
            "no heartbeat for 3.0 s and its host does not answer (no answer to probes for 1.5 s)");
}

// The default: an unanswered attempt counts once this side's own port answered a control attempt
// begun no earlier; while nothing local answers either, the prober is the one starved.
TEST(LivenessTest, UnansweredProbesCountOnlyOnceTheControlAnswers) {
  Liveness l(LivenessOptions{}, kT0, /*probed=*/true);
  l.ProbeResult(At(1.5), false, At(3.0));
  EXPECT_FALSE(l.Check(At(3.0)).lost);
  l.ControlAnswered(At(1.0));  // begun before the failed attempt: proves nothing about it
  EXPECT_FALSE(l.Check(At(3.1)).lost);
  EXPECT_FALSE(l.Check(At(29.9)).lost);
  l.ControlAnswered(At(1.45));  // begun with it (within 100 ms)
  const Liveness::Verdict v = l.Check(At(3.2));
  EXPECT_TRUE(v.lost);
  EXPECT_THAT(v.why, HasSubstr("no heartbeat for 3.2 s and its host does not answer"));
  Liveness answered(LivenessOptions{}, kT0, true);
  answered.ProbeResult(At(1.5), false, At(3.0));
  answered.ProbeResult(At(3.0), true, At(3.01));  // answered before the control came
  answered.ControlAnswered(At(3.0));
  EXPECT_FALSE(answered.Check(At(3.2)).lost);
}

TEST(LivenessTest, AnAnswerOrAHeartbeatRestartsTheUnansweredWindow) {
  Liveness l(Unconfirmed(), kT0, /*probed=*/true);
  l.ProbeResult(At(1.5), false, At(2.0));
  l.ProbeResult(At(2.0), true, At(2.1));   // the host answered: busy
  l.ProbeResult(At(2.5), false, At(3.0));  // then stopped answering (link down now)
  EXPECT_FALSE(l.Check(At(3.9)).lost);
  EXPECT_TRUE(l.Check(At(4.0)).lost);  // 1.5 s of unanswered probes, silent for 4 s
  l.Heartbeat(At(3.6));
  EXPECT_FALSE(l.Check(At(3.7)).lost);
  l.ProbeResult(At(3.5), false, At(4.0));  // begun before the heartbeat: stale
  EXPECT_FALSE(l.Check(At(6.59)).lost);
}

TEST(LivenessTest, ValidateRejectsInconsistentOptions) {
  EXPECT_EQ(ValidateLiveness(LivenessOptions{}), "");
  LivenessOptions o;
  o.missed_heartbeats_probe = 7;
  EXPECT_NE(ValidateLiveness(o), "");
  o = LivenessOptions{};
  o.silent_lost = absl::Seconds(1);
  EXPECT_NE(ValidateLiveness(o), "");
  o = LivenessOptions{};
  o.heartbeat_interval = absl::ZeroDuration();
  EXPECT_NE(ValidateLiveness(o), "");
}

// One input of a random history.
struct Input {
  enum Kind { kHeartbeat, kProbe } kind;
  absl::Time at;       // heartbeat time, or the probe attempt's end
  absl::Time started;  // probe attempts only
  bool answered = false;
};

// The reference: replays `history` (in order) and says whether the peer is lost at `now`.
bool ReferenceLost(const LivenessOptions& o, const std::vector<Input>& history, absl::Time now) {
  absl::Time last_heartbeat = kT0;
  for (const Input& in : history) {
    if (in.kind == Input::kHeartbeat) last_heartbeat = std::max(last_heartbeat, in.at);
  }
  const absl::Duration silent = now - last_heartbeat;
  if (silent >= o.silent_lost) return true;
  if (silent < o.lost_after()) return false;
  // Lost when the attempts that count (begun after the last heartbeat and after the last answered
  // one) include an unanswered one begun probe_unanswered ago or earlier, and none answered since.
  absl::Time last_answer = absl::InfinitePast();
  absl::Time first_unanswered = absl::InfiniteFuture();
  absl::Time heartbeat_so_far = kT0;
  for (const Input& in : history) {
    if (in.kind == Input::kHeartbeat) {
      heartbeat_so_far = std::max(heartbeat_so_far, in.at);
      first_unanswered = absl::InfiniteFuture();
      continue;
    }
    if (in.started < heartbeat_so_far || in.started < last_answer) continue;
    if (in.answered) {
      last_answer = std::max(last_answer, in.at);
      first_unanswered = absl::InfiniteFuture();
    } else {
      first_unanswered = std::min(first_unanswered, in.started);
    }
  }
  return now - first_unanswered >= o.probe_unanswered;
}

TEST(LivenessTest, RandomHistoriesAgreeWithTheReferenceAndNextIsExact) {
  const LivenessOptions o = Unconfirmed();
  std::mt19937 random(29);
  for (int trial = 0; trial < 2000; ++trial) {
    Liveness l(o, kT0, /*probed=*/true);
    std::vector<Input> history;
    absl::Time now = kT0;
    bool lost = false;
    for (int step = 0; step < 60 && !lost; ++step) {
      now += absl::Milliseconds(std::uniform_int_distribution<int>(1, 1500)(random));
      const int what = std::uniform_int_distribution<int>(0, 9)(random);
      if (what == 0) {
        history.push_back({Input::kHeartbeat, now, now});
        l.Heartbeat(now);
      } else if (what <= 6) {
        const absl::Time started =
            now - absl::Milliseconds(std::uniform_int_distribution<int>(0, 600)(random));
        const bool answered = what <= 2;
        history.push_back({Input::kProbe, now, started, answered});
        l.ProbeResult(started, answered, now);
      }
      const Liveness::Verdict v = l.Check(now);
      ASSERT_EQ(v.lost, ReferenceLost(o, history, now)) << "trial " << trial << " step " << step;
      lost = v.lost;
      if (lost) break;
      // Nothing changes before `next` without input; at `next` (or soon after) something may.
      ASSERT_GT(v.next, now);
      const absl::Time probe_at = l.last_heartbeat() + o.probe_after();
      for (absl::Time t = now; t < v.next && t < now + absl::Seconds(40);
           t += absl::Milliseconds(97)) {
        ASSERT_FALSE(ReferenceLost(o, history, t)) << "trial " << trial;
      }
      if (v.next < now + absl::Seconds(40) && v.next >= probe_at) {
        // A moment the verdict changes, or silent_lost/probe start: Check agrees with the
        // reference.
        ASSERT_EQ(l.Check(v.next).lost, ReferenceLost(o, history, v.next));
      }
    }
  }
}

}  // namespace
}  // namespace accel::rendezvous
