// JoinCoordinator under elastic membership, the hang verdict: the machine whose rank the job's
// agreed verdict names reports it (ReportRequest::HANG) and the server decides, once, whether it
// is evicted (the others restart without it), every machine restarts (machine 0, a fixed job) or
// the job ends (the budget spent). Driven with explicit times.
#include <string>

#include "tests/unit/rendezvous/join/coordinator_elastic_fixture.h"

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;
using testing_elastic::ElasticTest;
using testing_elastic::kT0;

// The hang verdict (launcher/process/hang_verdict.h), agreed by every machine, names rank 3 of
// machine 1: machine 1 reports it (a machine reports about itself only) and the server decides,
// once: machine 1 is told it is evicted, the others restart without it, counted.
TEST_F(ElasticTest, AnAgreedHangVerdictEvictsItsMachineAndTheOthersGoOnWithoutIt) {
  Start(1, 3, 3);
  FirstGeneration({0, 1, 2});
  ASSERT_TRUE(Report(1, v1::ReportRequest::HANG, 3, 0, kT0 + absl::Seconds(9)).ok());
  ASSERT_EQ(sinks_[1]->events.size(), 1u);
  const v1::Event& evicted = sinks_[1]->events[0];
  EXPECT_EQ(evicted.kind(), v1::Event::ABORT);
  EXPECT_TRUE(evicted.evicted());
  EXPECT_EQ(evicted.root_cause().machine_rank(), 1);
  EXPECT_EQ(evicted.root_cause().rank(), 3);
  EXPECT_THAT(evicted.root_cause().message(), HasSubstr("hang: rank 3 (machine 1) is stopped"));
  for (int rank : {0, 2}) {
    ASSERT_EQ(sinks_[rank]->events.size(), 1u);
    EXPECT_EQ(sinks_[rank]->events[0].kind(), v1::Event::RESTART);
    EXPECT_FALSE(sinks_[rank]->events[0].evicted());
    EXPECT_EQ(sinks_[rank]->events[0].root_cause().rank(), 3);
  }
  // Its late reports and its broken watch change nothing.
  EXPECT_TRUE(Report(1, v1::ReportRequest::FAILURE, 3, 0, kT0 + absl::Seconds(9.1)).ok());
  coordinator_->WatchBroken(watch_ids_[1], kT0 + absl::Seconds(9.2));
  Join(2, kT0 + absl::Seconds(9.3));
  EXPECT_FALSE(Take(2).has_value());  // machine 0 survived too: waited for
  Join(0, kT0 + absl::Seconds(9.4));  // every survivor in: no last call, machine 1 not waited for
  const v1::JoinResponse m0 = Joined(0);
  const v1::JoinResponse m2 = Joined(2);
  ExpectSurvivors0And2(m0, m2);  // an eviction, like a loss, draws on the restart budget
  EXPECT_EQ(m0.membership(),
            "machine 1 (host host1) left: evicted: the job's hang verdict names its rank 3");
}

// In-place jobs: a machine whose worker failed reports it the same way (with how the worker
// ended) and leaves; the others restart without it and are told why it left.
TEST_F(ElasticTest, AFailedWorkersReportEvictsItsMachineWithTheFailureAsTheReason) {
  Start(2, 3, 3);
  FirstGeneration({0, 1, 2});
  v1::ReportRequest r;
  r.set_run_id("r1");
  r.set_machine_rank(2);
  r.set_attempt(0);
  r.set_kind(v1::ReportRequest::HANG);
  r.mutable_cause()->set_rank(5);
  r.mutable_cause()->set_signal(9);
  r.mutable_cause()->set_message("rank 5 killed by SIGKILL");
  r.set_machine_secret(secrets_[2]);
  ASSERT_TRUE(coordinator_->Report(r, kT0 + absl::Seconds(9)).ok());
  ASSERT_EQ(sinks_[2]->events.size(), 1u);
  EXPECT_TRUE(sinks_[2]->events[0].evicted());
  for (int rank : {0, 1}) {
    ASSERT_EQ(sinks_[rank]->events.size(), 1u);
    EXPECT_EQ(sinks_[rank]->events[0].kind(), v1::Event::RESTART);
  }
  Join(0, kT0 + absl::Seconds(9.1));
  Join(1, kT0 + absl::Seconds(9.2));
  const v1::JoinResponse m0 = Joined(0);
  const v1::JoinResponse m1 = Joined(1);
  EXPECT_EQ(m0.world_size(), 4);
  EXPECT_EQ(m1.base_rank(), 2);  // survivors keep their ranks
  EXPECT_EQ(m0.membership(), "machine 2 (host host2) left: evicted: its rank 5 failed");
}

TEST_F(ElasticTest, AHangVerdictOfAnEarlierGenerationEvictsNobody) {
  Start(1, 2, 3);
  FirstGeneration({0, 1});
  coordinator_->WatchBroken(watch_ids_[1], kT0 + absl::Seconds(2));  // generation 1 forms
  Join(0, kT0 + absl::Seconds(2.1));
  Joined(0);
  EXPECT_TRUE(Report(1, v1::ReportRequest::HANG, 3, 0, kT0 + absl::Seconds(2.2)).ok());
  EXPECT_TRUE(sinks_[0]->events.empty());
}

TEST_F(ElasticTest, AHangVerdictThatFindsTheBudgetSpentEndsTheJobOnEveryMachine) {
  Start(1, 2, 0);
  FirstGeneration({0, 1});
  ASSERT_TRUE(Report(1, v1::ReportRequest::HANG, 3, 0, kT0 + absl::Seconds(9)).ok());
  for (int rank : {0, 1}) {
    ASSERT_EQ(sinks_[rank]->events.size(), 1u);
    EXPECT_EQ(sinks_[rank]->events[0].kind(), v1::Event::ABORT);
    EXPECT_FALSE(sinks_[rank]->events[0].evicted());  // the job ends: nobody goes on
    EXPECT_THAT(sinks_[rank]->events[0].root_cause().message(),
                HasSubstr("hang: rank 3 (machine 1) is stopped"));
    EXPECT_THAT(sinks_[rank]->events[0].root_cause().message(),
                HasSubstr("restart budget spent: max_restarts 0, 0 restarts used"));
  }
}

TEST_F(ElasticTest, AHangVerdictOnMachineZeroRestartsEveryMachine) {
  Start(1, 2, 3);
  FirstGeneration({0, 1});
  // Machine 0 hosts the rendezvous and cannot leave: its hung worker restarts with the others.
  ASSERT_TRUE(Report(0, v1::ReportRequest::HANG, 1, 0, kT0 + absl::Seconds(9)).ok());
  for (int rank : {0, 1}) {
    ASSERT_EQ(sinks_[rank]->events.size(), 1u);
    EXPECT_EQ(sinks_[rank]->events[0].kind(), v1::Event::RESTART);
  }
  Join(0, kT0 + absl::Seconds(10));
  EXPECT_FALSE(Take(0).has_value());  // machine 1 is waited for
  Join(1, kT0 + absl::Seconds(10));
  const v1::JoinResponse m1 = Joined(1);
  EXPECT_EQ(m1.group_world_size(), 2);
  EXPECT_EQ(m1.restart_count(), 1);
  EXPECT_EQ(m1.membership(), "");
}

TEST_F(ElasticTest, AnEvictionBelowMinWaitsForAReplacementThenNamesTheHang) {
  Start(2, 2, 3);
  FirstGeneration({0, 1});
  ASSERT_TRUE(Report(1, v1::ReportRequest::HANG, 3, 0, kT0 + absl::Seconds(2)).ok());
  EXPECT_TRUE(sinks_[1]->events.at(0).evicted());
  Join(0, kT0 + absl::Seconds(2));
  coordinator_->Tick(kT0 + absl::Seconds(32));
  auto result = Take(0);
  ASSERT_TRUE(result.has_value());
  ASSERT_FALSE(result->ok());
  EXPECT_TRUE(absl::IsDeadlineExceeded(result->status()));
  EXPECT_THAT(result->status().message(),
              HasSubstr("fewer than min_machines 2, and no replacement joined"));
  EXPECT_THAT(result->status().message(), HasSubstr("hang: rank 3 (machine 1) is stopped"));
}

// A fixed job's hang restarts every machine while the budget lasts (nobody can leave).
TEST_F(ElasticTest, AHangVerdictOfAFixedJobRestartsEveryMachine) {
  Start(2, 2, 3);
  options_.elastic.enabled = false;
  JoinCoordinator::Hooks hooks;
  hooks.store_port = [] { return 7000; };
  hooks.pick_master_port = [this] { return absl::StatusOr<int>(29500 + ports_++); };
  coordinator_ = std::make_unique<JoinCoordinator>(options_, std::move(hooks));
  for (int rank : {0, 1}) Join(rank, kT0);
  for (int rank : {0, 1}) Joined(rank);
  ASSERT_TRUE(Report(1, v1::ReportRequest::HANG, 3, 0, kT0 + absl::Seconds(9)).ok());
  for (int rank : {0, 1}) {
    ASSERT_EQ(sinks_[rank]->events.size(), 1u);
    EXPECT_EQ(sinks_[rank]->events[0].kind(), v1::Event::RESTART);
    EXPECT_FALSE(sinks_[rank]->events[0].evicted());
  }
}

}  // namespace
}  // namespace accel::rendezvous
