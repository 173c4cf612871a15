// JoinCoordinator, the join phase: completion and ranks, the answers, who may speak for a
// machine, duplicates, timeouts and cancelled joins.
#include <set>

#include "tests/unit/rendezvous/join/coordinator_fixture.h"

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;
using testing_join::CoordinatorTest;
using testing_join::kT0;
using testing_join::RecordingSink;

TEST_F(CoordinatorTest, CompletesWhenLastMachineJoinsWithPrefixSumRanks) {
  Join(Request(2, 2));
  Join(Request(0, 1));
  EXPECT_TRUE(results_.empty());  // still waiting
  Join(Request(1, 4));
  const std::vector<int> expected_base = {0, 1, 5};
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_EQ(results_[rank].size(), 1u);
    ASSERT_TRUE(results_[rank][0].ok()) << results_[rank][0].status();
    const v1::JoinResponse& r = *results_[rank][0];
    EXPECT_EQ(r.base_rank(), expected_base[rank]);
    EXPECT_EQ(r.world_size(), 7);
    EXPECT_EQ(r.attempt(), 0);
    EXPECT_EQ(r.master_addr(), "10.0.0.1");
    EXPECT_EQ(r.master_port(), 29500);
    EXPECT_EQ(r.store_endpoint(), "10.0.0.1:7000");
    EXPECT_EQ(r.store_namespace(), "r1/0");
    ASSERT_EQ(r.machines_size(), 3);
    EXPECT_EQ(r.machines(2).hostname(), "host2");
    EXPECT_EQ(r.machines(2).base_rank(), 5);
    EXPECT_EQ(r.machines(1).local_processes(), 4);
  }
}

TEST_F(CoordinatorTest, MachineListOnlyForThoseWhoAskForIt) {
  v1::JoinRequest quiet = Request(1, 1);
  quiet.set_want_machines(false);
  Join(Request(0, 1));
  Join(quiet);
  Join(Request(2, 1));
  EXPECT_EQ(results_[0][0]->machines_size(), 3);
  EXPECT_EQ(results_[1][0]->machines_size(), 0);
  EXPECT_EQ(results_[1][0]->base_rank(), 1);
}

TEST_F(CoordinatorTest, TheDefaultAnswerIsTheCallersOwnEntryWithoutTheList) {
  for (int rank = 0; rank < 3; ++rank) {
    v1::JoinRequest r = Request(rank, rank + 1);
    r.set_want_machines(false);
    Join(r);
  }
  std::set<std::string> secrets;
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(results_[rank][0].ok()) << results_[rank][0].status();
    const v1::JoinResponse& r = *results_[rank][0];
    EXPECT_EQ(r.machines_size(), 0);
    EXPECT_EQ(r.self().machine_rank(), rank);
    EXPECT_EQ(r.self().address(), "10.0.0." + std::to_string(rank + 1));
    EXPECT_EQ(r.self().base_rank(), rank == 0 ? 0 : rank == 1 ? 1 : 3);
    EXPECT_EQ(r.self().local_processes(), rank + 1);
    EXPECT_EQ(r.run_id(), "r1");
    EXPECT_EQ(r.machine_secret().size(), 32u);
    secrets.insert(r.machine_secret());
  }
  EXPECT_EQ(secrets.size(), 3u);
}

TEST_F(CoordinatorTest, AJoinWithoutARunIdJoinsTheServersRun) {
  for (int rank = 0; rank < 3; ++rank) {
    v1::JoinRequest r = Request(rank, 1);
    if (rank > 0) r.clear_run_id();
    Join(r);
  }
  ASSERT_TRUE(results_[2][0].ok()) << results_[2][0].status();
  EXPECT_EQ(results_[2][0]->run_id(), "r1");
  v1::JoinRequest wrong = Request(0, 1, "other");
  wrong.set_run_id("r2");
  Join(wrong);
  EXPECT_THAT(results_[0].back().status().message(), HasSubstr("run id mismatch"));
}

TEST_F(CoordinatorTest, OnlyAMachinesOwnAgentCanReportWatchOrHeartbeatForIt) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  // A client with the token but not machine 1's secret (another machine, or a third party).
  v1::ReportRequest forged;
  forged.set_run_id("r1");
  forged.set_machine_rank(1);
  forged.set_kind(v1::ReportRequest::FAILURE);
  forged.mutable_cause()->set_exit_code(42);
  for (const std::string& secret : {std::string(), SecretOf(2), SecretOf(1).substr(1)}) {
    forged.set_machine_secret(secret);
    const absl::Status status = coordinator_->Report(forged, kT0);
    EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
    EXPECT_THAT(status.message(), HasSubstr("machine_rank 1: the call does not carry"));
  }
  v1::HeartbeatRequest hb;
  hb.set_run_id("r1");
  hb.set_machine_rank(1);
  hb.set_machine_secret(SecretOf(2));
  EXPECT_EQ(coordinator_->Heartbeat(hb, kT0).code(), absl::StatusCode::kPermissionDenied);
  v1::WatchRequest w;
  w.set_run_id("r1");
  w.set_machine_rank(1);
  EXPECT_EQ(coordinator_->Watch(w, std::make_shared<RecordingSink>()).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(s0->events.empty());  // nothing was aborted
  // A machine's own report names that machine, whatever its cause says.
  v1::ReportRequest own;
  own.set_run_id("r1");
  own.set_machine_rank(2);
  own.set_kind(v1::ReportRequest::FAILURE);
  own.set_machine_secret(SecretOf(2));
  own.mutable_cause()->set_machine_rank(0);
  ASSERT_TRUE(coordinator_->Report(own, kT0).ok());
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_EQ(s0->events[0].root_cause().machine_rank(), 2);
}

TEST_F(CoordinatorTest, DuplicateRankFailsEveryWaitingMachineWithTheReasonAtOnce) {
  Join(Request(0, 1));
  Join(Request(1, 1, "agent-a"));
  Join(Request(1, 1, "agent-b"));
  ASSERT_EQ(results_[1].size(), 2u);
  const std::string duplicate =
      "duplicate machine_rank 1: machine_rank 1 (host host1, address 10.0.0.2) and machine_rank 1 "
      "(host host1, address 10.0.0.2) both joined; give each machine its own machine_rank";
  // The refused machine hears why.
  EXPECT_EQ(results_[1][1].status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(results_[1][1].status().message(), "join rendezvous run_id=r1: " + duplicate);
  // So do the machines that were waiting (machine 0 among them): the attempt cannot complete.
  for (const auto& result : {results_[0][0], results_[1][0]}) {
    EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(result.status().message(),
              "join rendezvous run_id=r1: machine_rank 1 (host host1, address 10.0.0.2) was "
              "refused, so this attempt cannot complete: " +
                  duplicate);
  }
}

TEST_F(CoordinatorTest, AJoinWithoutTheTokenIsNamedAtTheTimeoutButEndsNothing) {
  Join(Request(0, 1), kT0);
  v1::JoinRequest stranger = Request(1, 1);
  stranger.set_hostname("evil\nhost");
  const std::string why =
      "join rendezvous from ipv4:10.9.9.9:4242: the rendezvous token is wrong (set "
      "rdzv_token_file or ACCEL_RDZV_TOKEN to the job's token)";
  EXPECT_TRUE(coordinator_->NoteRefusedJoin(stranger, "ipv4:10.9.9.9:4242", why));
  EXPECT_FALSE(coordinator_->NoteRefusedJoin(stranger, "ipv4:10.9.9.9:4242", why));  // once
  for (int i = 0; i < 10; ++i) {
    coordinator_->NoteRefusedJoin(Request(2, i + 1), "ipv4:10.9.9.9:" + std::to_string(i), why);
  }
  EXPECT_TRUE(results_.empty());  // anyone can be refused: machine 0 keeps waiting
  coordinator_->Tick(kT0 + absl::Seconds(30));
  ASSERT_EQ(results_[0].size(), 1u);
  const std::string message(results_[0][0].status().message());
  EXPECT_THAT(message,
              HasSubstr("missing machine_rank 1, 2; refused: a join claiming machine_rank 1 "
                        "(host evil?host) from 10.9.9.9: the rendezvous token is wrong (set "
                        "rdzv_token_file or ACCEL_RDZV_TOKEN to the job's token); a join"));
  EXPECT_EQ(message.find("ipv4:10.9.9.9:3"), std::string::npos);  // at most four are kept
}

TEST_F(CoordinatorTest, DuplicateRankAfterCompletionIsRefused) {
  JoinAll({1, 1, 1});
  Join(Request(2, 1, "intruder"));
  ASSERT_EQ(results_[2].size(), 2u);
  EXPECT_THAT(results_[2][1].status().message(), HasSubstr("duplicate machine_rank 2"));
}

TEST_F(CoordinatorTest, RetryFromSameAgentReplacesItsEarlierJoin) {
  Join(Request(1, 1, "agent-a"));
  Join(Request(1, 1, "agent-a"));
  ASSERT_EQ(results_[1].size(), 1u);
  EXPECT_EQ(results_[1][0].status().code(), absl::StatusCode::kAborted);
  Join(Request(0, 1));
  Join(Request(2, 1));
  ASSERT_EQ(results_[1].size(), 2u);
  EXPECT_TRUE(results_[1][1].ok());
}

TEST_F(CoordinatorTest, TimeoutFailsEveryWaitingMachineExactlyAtTheDeadline) {
  Join(Request(0, 1), kT0);
  Join(Request(2, 1), kT0 + absl::Seconds(10));
  EXPECT_EQ(coordinator_->Tick(kT0 + absl::Seconds(29)), kT0 + absl::Seconds(30));
  EXPECT_TRUE(results_.empty());
  coordinator_->Tick(kT0 + absl::Seconds(30));
  const std::string expected =
      "join rendezvous run_id=r1 attempt=0: timed out after 30s with 2 of 3 machines joined; "
      "arrived: machine_rank 0 (host host0, address 10.0.0.1), machine_rank 2 (host host2, "
      "address 10.0.0.3); missing machine_rank 1";
  for (int rank : {0, 2}) {
    ASSERT_EQ(results_[rank].size(), 1u);
    EXPECT_EQ(results_[rank][0].status().code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_EQ(results_[rank][0].status().message(), expected);
  }
  EXPECT_EQ(coordinator_->Tick(kT0 + absl::Seconds(31)), absl::InfiniteFuture());
}

TEST_F(CoordinatorTest, CancelledJoinLeavesAndItsRankCanJoinAgain) {
  const JoinCoordinator::Id id = Join(Request(1, 1, "agent-a"));
  coordinator_->CancelJoin(id);
  ASSERT_EQ(results_[1].size(), 1u);
  EXPECT_EQ(results_[1][0].status().code(), absl::StatusCode::kCancelled);
  Join(Request(1, 1, "agent-b"));  // a restarted agent: not a duplicate
  Join(Request(0, 1));
  Join(Request(2, 1));
  ASSERT_EQ(results_[1].size(), 2u);
  EXPECT_TRUE(results_[1][1].ok());
}

}  // namespace
}  // namespace accel::rendezvous
