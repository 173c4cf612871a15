// JoinCoordinator, liveness: missing heartbeats, and the TCP probe that tells a busy machine from
// a lost one.
#include "tests/unit/rendezvous/join/coordinator_fixture.h"

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;
using testing_join::CoordinatorTest;
using testing_join::kT0;
using testing_join::RecordingSink;

TEST_F(CoordinatorTest, MissingHeartbeatsAbortEveryWatcher) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  auto s1 = WatchAs(1);
  auto s2 = WatchAs(2);
  v1::HeartbeatRequest hb;
  hb.set_run_id("r1");
  hb.set_attempt(0);
  for (int rank : {0, 1}) {
    hb.set_machine_rank(rank);
    hb.set_machine_secret(SecretOf(rank));
    ASSERT_TRUE(coordinator_->Heartbeat(hb, kT0 + absl::Seconds(2)).ok());
  }
  coordinator_->Tick(kT0 + absl::Milliseconds(2999));
  EXPECT_TRUE(s0->events.empty());
  coordinator_->Tick(kT0 + absl::Seconds(3));  // machine 2 silent for 6 × 500 ms
  for (auto& sink : {s0, s1, s2}) {
    ASSERT_EQ(sink->events.size(), 1u);
    EXPECT_EQ(sink->events[0].kind(), v1::Event::ABORT);
    EXPECT_EQ(sink->events[0].root_cause().machine_rank(), 2);
    EXPECT_EQ(sink->events[0].root_cause().message(),
              "machine 2 lost: no heartbeat for 3.0 s (host host2, address 10.0.0.3)");
    EXPECT_EQ(sink->events[0].root_cause().rank(), -1);
  }
  Join(Request(0, 1, "late"));
  EXPECT_EQ(results_[0].back().status().code(), absl::StatusCode::kAborted);
}

// Machines that give a probe port (every real agent does) are judged by join/liveness.h.
class ProbedCoordinatorTest : public CoordinatorTest {
 protected:
  void JoinProbed() {
    for (int rank = 0; rank < 3; ++rank) {
      v1::JoinRequest r = Request(rank, 1);
      r.set_probe_port(40000 + rank);
      Join(r);
    }
    for (int rank = 0; rank < 3; ++rank) ASSERT_TRUE(results_[rank].at(0).ok());
  }
  void HeartbeatFrom(int rank, absl::Time at) {
    v1::HeartbeatRequest hb;
    hb.set_run_id("r1");
    hb.set_machine_rank(rank);
    hb.set_machine_secret(SecretOf(rank));
    ASSERT_TRUE(coordinator_->Heartbeat(hb, at).ok());
  }
  // Every machine but `silent` heartbeats every 500 ms up to `until`; machine `silent`'s host
  // answers probes or not; the coordinator ticks every 100 ms.
  void Run(int silent, bool host_answers, absl::Duration until) {
    for (absl::Duration t = absl::ZeroDuration(); t <= until; t += absl::Milliseconds(100)) {
      const absl::Time now = kT0 + t;
      if (t % absl::Milliseconds(500) == absl::ZeroDuration()) {
        for (int rank = 0; rank < 3; ++rank) {
          if (rank != silent) HeartbeatFrom(rank, now);
        }
      }
      coordinator_->Tick(now);
      for (const ProbeTarget& target : coordinator_->ProbeTargets(now)) {
        probed_.insert(target.key);
        EXPECT_EQ(target.host, "10.0.0." + std::to_string(target.key + 1));
        EXPECT_EQ(target.port, 40000 + target.key);
        coordinator_->ProbeResult(target.key, now, host_answers, now + absl::Milliseconds(50));
        if (control_answers_) coordinator_->ControlResult(now, true, now + absl::Milliseconds(60));
      }
    }
  }
  std::set<int> probed_;
  bool control_answers_ = true;  // the server's own port answers its control probes
};

TEST_F(ProbedCoordinatorTest, ABusyMachineWhoseHostAnswersIsNotLost) {
  JoinProbed();
  auto s0 = WatchAs(0);
  Run(/*silent=*/2, /*host_answers=*/true, absl::Seconds(29.9));
  EXPECT_TRUE(s0->events.empty());
  EXPECT_EQ(probed_, std::set<int>{2});
  Run(2, true, absl::Seconds(30));
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_THAT(s0->events[0].root_cause().message(),
              HasSubstr("machine 2 lost: no heartbeat for 30.0 s although its host answers"));
}

TEST_F(ProbedCoordinatorTest, ASilentMachineWhoseHostDoesNotAnswerIsLostInThreeSeconds) {
  JoinProbed();
  auto s0 = WatchAs(0);
  Run(/*silent=*/1, /*host_answers=*/false, absl::Seconds(2.9));
  EXPECT_TRUE(s0->events.empty());
  Run(1, false, absl::Seconds(3.0));
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_EQ(s0->events[0].root_cause().message(),
            "machine 1 lost: no heartbeat for 3.0 s and its host does not answer (no answer to "
            "probes for 1.5 s) (host host1, address 10.0.0.2)");
}

// A server too starved to complete even a handshake with itself blames nobody for the silence.
TEST_F(ProbedCoordinatorTest, UnansweredProbesBlameNobodyWhileTheControlDoesNotAnswer) {
  JoinProbed();
  auto s0 = WatchAs(0);
  control_answers_ = false;
  Run(/*silent=*/1, /*host_answers=*/false, absl::Seconds(29.9));
  EXPECT_TRUE(s0->events.empty());
  coordinator_->ControlResult(kT0 + absl::Seconds(29.8), true, kT0 + absl::Seconds(29.95));
  ASSERT_EQ(s0->events.size(), 1u);  // now the unanswered attempts count
  EXPECT_THAT(s0->events[0].root_cause().message(),
              HasSubstr("machine 1 lost: no heartbeat for 29.9 s and its host does not answer"));
}

TEST_F(ProbedCoordinatorTest, ALateHeartbeatLossNeverReplacesTheFirstFailure) {
  JoinProbed();
  auto s0 = WatchAs(0);
  ASSERT_TRUE(Report(1, v1::ReportRequest::FAILURE, "rank 1: signal 9").ok());
  Run(/*silent=*/2, /*host_answers=*/false, absl::Seconds(40));
  coordinator_->ProbeResult(2, kT0 + absl::Seconds(41), false, kT0 + absl::Seconds(42));
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_EQ(s0->events[0].root_cause().message(), "rank 1: signal 9");
  EXPECT_TRUE(probed_.empty());  // nothing is probed once the attempt has ended
  EXPECT_EQ(WatchAs(2)->events.at(0).root_cause().message(), "rank 1: signal 9");
}

}  // namespace
}  // namespace accel::rendezvous
