// JoinCoordinator, an attempt after the join: broken watches, the root cause, done, loss and
// abort events, restarts, shutdown, process counts and fingerprints.
#include "tests/unit/rendezvous/join/coordinator_fixture.h"

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;
using testing_join::CoordinatorTest;
using testing_join::kT0;
using testing_join::RecordingSink;

TEST_F(CoordinatorTest, BrokenWatchAbortsTheOthers) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  auto s1 = WatchAs(1);
  WatchAs(2);
  coordinator_->WatchBroken(watch_ids_[1], kT0);
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_EQ(s0->events[0].kind(), v1::Event::ABORT);
  EXPECT_EQ(s0->events[0].root_cause().message(),
            "machine 1 lost: its connection to the rendezvous server closed (host host1, "
            "address 10.0.0.2)");
  EXPECT_TRUE(s1->events.empty());  // its stream is gone
  auto late = WatchAs(1);           // a watch after the abort gets it at once
  ASSERT_EQ(late->events.size(), 1u);
  EXPECT_EQ(late->events[0].kind(), v1::Event::ABORT);
}

TEST_F(CoordinatorTest, FirstFailureIsTheRootCause) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  ASSERT_TRUE(Report(2, v1::ReportRequest::FAILURE, "rank 2 exited with 3").ok());
  ASSERT_TRUE(Report(1, v1::ReportRequest::FAILURE, "rank 1 got SIGTERM").ok());
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_EQ(s0->events[0].root_cause().message(), "rank 2 exited with 3");
  auto s1 = WatchAs(1);
  EXPECT_EQ(s1->events[0].root_cause().message(), "rank 2 exited with 3");
}

TEST_F(CoordinatorTest, DoneWhenEveryMachineReportsDone) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  auto s2 = WatchAs(2);
  ASSERT_TRUE(Report(0, v1::ReportRequest::DONE).ok());
  ASSERT_TRUE(Report(1, v1::ReportRequest::DONE).ok());
  coordinator_->WatchBroken(watch_ids_[0], kT0);  // a finished machine leaving is no loss
  EXPECT_TRUE(s2->events.empty());
  ASSERT_TRUE(Report(2, v1::ReportRequest::DONE).ok());
  ASSERT_EQ(s2->events.size(), 1u);
  EXPECT_EQ(s2->events[0].kind(), v1::Event::DONE);
}

TEST_F(CoordinatorTest, AMachineWhoseWatchComesAfterTheEndIsAwaitedBeforeShutdown) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  auto s1 = WatchAs(1);
  EXPECT_TRUE(coordinator_->AwaitTerminalSent(kT0));  // running: nothing to wait for
  for (int rank : {0, 1, 2}) ASSERT_TRUE(Report(rank, v1::ReportRequest::DONE).ok());
  // Machine 2 reported done before its watch reached the server: it is still owed "done".
  EXPECT_FALSE(coordinator_->AwaitTerminalSent(absl::Now() + absl::Milliseconds(20)));
  auto s2 = WatchAs(2);
  ASSERT_EQ(s2->events.size(), 1u);
  EXPECT_EQ(s2->events[0].kind(), v1::Event::DONE);
  EXPECT_TRUE(coordinator_->AwaitTerminalSent(absl::Now() + absl::Seconds(5)));
}

TEST_F(CoordinatorTest, ALostMachineIsOwedNoEventButTheOthersAre) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  auto s1 = WatchAs(1);
  v1::HeartbeatRequest hb;
  hb.set_run_id("r1");
  for (int rank : {0, 1}) {
    hb.set_machine_rank(rank);
    hb.set_machine_secret(SecretOf(rank));
    ASSERT_TRUE(coordinator_->Heartbeat(hb, kT0 + absl::Seconds(2)).ok());
  }
  coordinator_->Tick(kT0 + absl::Seconds(3));  // machine 2, never heard from, is lost
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_EQ(s0->events[0].root_cause().machine_rank(), 2);
  EXPECT_TRUE(coordinator_->AwaitTerminalSent(absl::Now()));
}

TEST_F(CoordinatorTest, AMachineThatFailedIsOwedTheAbortItCaused) {
  JoinAll({1, 1, 1});
  WatchAs(0);
  WatchAs(2);
  ASSERT_TRUE(Report(1, v1::ReportRequest::FAILURE, "rank 1 exited with 3").ok());
  EXPECT_FALSE(coordinator_->AwaitTerminalSent(absl::Now() + absl::Milliseconds(20)));
  WatchAs(1);
  EXPECT_TRUE(coordinator_->AwaitTerminalSent(absl::Now()));
}

TEST_F(CoordinatorTest, RestartStartsTheNextAttempt) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  ASSERT_TRUE(Report(1, v1::ReportRequest::RESTART, "rank 1 died").ok());
  ASSERT_TRUE(Report(2, v1::ReportRequest::RESTART, "again").ok());  // same attempt: ignored
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_EQ(s0->events[0].kind(), v1::Event::RESTART);
  EXPECT_EQ(s0->events[0].attempt(), 1);
  EXPECT_EQ(over_, std::vector<std::string>{"r1/0"});
  auto stale = WatchAs(2, 0);  // an agent still on attempt 0 learns of the restart and why
  ASSERT_EQ(stale->events.size(), 1u);
  EXPECT_EQ(stale->events[0].kind(), v1::Event::RESTART);
  EXPECT_EQ(stale->events[0].attempt(), 1);
  EXPECT_EQ(stale->events[0].root_cause().message(), "rank 1 died");
  results_.clear();
  JoinAll({1, 1, 1});
  EXPECT_EQ(results_[0][0]->attempt(), 1);
  EXPECT_EQ(results_[0][0]->store_namespace(), "r1/1");
}

// Issue 35: an attempt that ended stays ended. A RESTART report that arrives after another
// machine's failure aborted the attempt (machine 0 restarting its workers in the same moment)
// used to start attempt 1, which then waited rdzv_timeout for machines that had exited.
TEST_F(CoordinatorTest, AReportCannotReviveAnAbortedAttempt) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  ASSERT_TRUE(Report(1, v1::ReportRequest::FAILURE, "rank 1 exited with 3").ok());
  const absl::Status restart = Report(0, v1::ReportRequest::RESTART, "rank 0 died");
  EXPECT_EQ(restart.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(restart.message()), HasSubstr("attempt 0 already aborted"));
  EXPECT_EQ(Report(2, v1::ReportRequest::HANG, "rank 2 hung").code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Report(2, v1::ReportRequest::FAILURE, "rank 2 got SIGTERM").ok());  // not the cause
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_EQ(s0->events[0].kind(), v1::Event::ABORT);
  EXPECT_EQ(s0->events[0].root_cause().message(), "rank 1 exited with 3");
  auto late = WatchAs(2);  // still the abort, not a restart
  ASSERT_EQ(late->events.size(), 1u);
  EXPECT_EQ(late->events[0].kind(), v1::Event::ABORT);
}

TEST_F(CoordinatorTest, AReportCannotReviveAFinishedAttempt) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  for (int rank : {0, 1, 2}) ASSERT_TRUE(Report(rank, v1::ReportRequest::DONE).ok());
  const absl::Status restart = Report(1, v1::ReportRequest::RESTART, "late");
  EXPECT_EQ(restart.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(restart.message()), HasSubstr("attempt 0 already finished"));
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_EQ(s0->events[0].kind(), v1::Event::DONE);
}

TEST_F(CoordinatorTest, ShutdownFailsWaitersAndClosesWatches) {
  Join(Request(0, 1));
  coordinator_->Shutdown();
  ASSERT_EQ(results_[0].size(), 1u);
  EXPECT_EQ(results_[0][0].status().code(), absl::StatusCode::kUnavailable);
  Join(Request(1, 1));
  EXPECT_EQ(results_[1][0].status().code(), absl::StatusCode::kUnavailable);
}

class CoordinatorProcessesTest : public CoordinatorTest {
 protected:
  CoordinatorProcessesTest() : CoordinatorTest(2, 4) {}
};

TEST_F(CoordinatorProcessesTest, TotalProcessesMustMatchNumProcesses) {
  Join(Request(0, 2));
  Join(Request(1, 3));
  for (int rank : {0, 1}) {
    ASSERT_EQ(results_[rank].size(), 1u);
    EXPECT_EQ(results_[rank][0].status().message(),
              "join rendezvous run_id=r1: num_processes mismatch: the machines run 5 processes "
              "in total (machine_rank 0 (host host0, address 10.0.0.1) runs 2, machine_rank 1 "
              "(host host1, address 10.0.0.2) runs 3) but num_processes=4");
  }
}

TEST_F(CoordinatorProcessesTest, VersionWarningReachesEveryMachine) {
  v1::JoinRequest a = Request(0, 2);
  a.set_accel_version("0.1.0");
  v1::JoinRequest b = Request(1, 2);
  b.set_accel_version("0.2.0");
  Join(a);
  Join(b);
  ASSERT_TRUE(results_[0][0].ok());
  ASSERT_EQ(results_[0][0]->warnings_size(), 1);
  EXPECT_THAT(results_[0][0]->warnings(0), HasSubstr("accel-launch 0.2.0 vs 0.1.0"));
  EXPECT_EQ(results_[1][0]->warnings_size(), 1);
}

class FingerprintMismatchTest : public CoordinatorProcessesTest {
 protected:
  // Machines 0 and 1 join with different mixed_precision, machine 0 first or second. Machine 0's
  // config is the job's whichever reaches the server first: machine 1 is the one refused, and
  // machine 0 learns which key differs at once (the netns agent test once saw the roles swap
  // when machine 1 won the race).
  void ExpectMachineOneRefused(bool machine_zero_first) {
    v1::JoinRequest zero = Request(0, 2);
    (*zero.mutable_config_fingerprint())["mixed_precision"] = "fp16";
    v1::JoinRequest one = Request(1, 2);
    (*one.mutable_config_fingerprint())["mixed_precision"] = "no";
    Join(machine_zero_first ? zero : one);
    Join(machine_zero_first ? one : zero);
    const std::string reason =
        "config fingerprint mismatch: machine_rank 1 (host host1, address 10.0.0.2) and "
        "machine_rank 0 (host host0, address 10.0.0.1) differ in mixed_precision";
    ASSERT_EQ(results_[1].size(), 1u);
    EXPECT_EQ(results_[1][0].status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(results_[1][0].status().message(), "join rendezvous run_id=r1: " + reason);
    ASSERT_EQ(results_[0].size(), 1u);
    EXPECT_EQ(results_[0][0].status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(results_[0][0].status().message(),
              "join rendezvous run_id=r1: machine_rank 1 (host host1, address 10.0.0.2) was "
              "refused, so this attempt cannot complete: " +
                  reason);
  }
};

TEST_F(FingerprintMismatchTest, MachineOneJoiningAfterMachineZeroIsRefused) {
  ExpectMachineOneRefused(/*machine_zero_first=*/true);
}

TEST_F(FingerprintMismatchTest, MachineOneJoiningBeforeMachineZeroIsRefused) {
  ExpectMachineOneRefused(/*machine_zero_first=*/false);
}

}  // namespace
}  // namespace accel::rendezvous
