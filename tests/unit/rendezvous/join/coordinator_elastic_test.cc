// JoinCoordinator under elastic membership (join/membership.h): generations of MIN..MAX
// machines, a lost machine restarting the survivors without it, a joiner entering at the next
// generation, the job-wide restart budget, and the end below MIN. Driven with explicit times.
#include <string>
#include <vector>

#include "tests/unit/rendezvous/join/coordinator_elastic_fixture.h"

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;
using testing_elastic::ElasticTest;
using testing_elastic::kT0;

TEST_F(ElasticTest, StartsWithMinAfterTheLastCallAndWithMaxAtOnce) {
  Start(2, 3, 0);
  Join(0, kT0);
  EXPECT_EQ(coordinator_->Tick(kT0 + absl::Seconds(5)), kT0 + absl::Seconds(30));  // below MIN
  EXPECT_FALSE(Take(0).has_value());
  Join(2, kT0 + absl::Seconds(5));
  EXPECT_EQ(coordinator_->Tick(kT0 + absl::Seconds(5.5)), kT0 + absl::Seconds(6));
  EXPECT_FALSE(Take(0).has_value());
  coordinator_->Tick(kT0 + absl::Seconds(6));
  const v1::JoinResponse m0 = Joined(0);
  const v1::JoinResponse m2 = Joined(2);
  EXPECT_EQ(m0.world_size(), 4);
  EXPECT_EQ(m0.group_world_size(), 2);
  EXPECT_EQ(m0.group_rank(), 0);
  EXPECT_EQ(m2.group_rank(), 1);  // dense: machine_rank 2 is the second machine
  EXPECT_EQ(m2.base_rank(), 2);
  EXPECT_EQ(m2.membership(), "");

  Start(2, 3, 0);
  for (int rank : {0, 1, 2}) Join(rank, kT0);  // MAX: no last call
  EXPECT_EQ(Joined(1).group_world_size(), 3);
}

TEST_F(ElasticTest, ALostMachineRestartsTheSurvivorsWithoutItInOrder) {
  Start(1, 3, 3);
  FirstGeneration({0, 1, 2});
  coordinator_->WatchBroken(watch_ids_[1], kT0 + absl::Seconds(2));
  for (int rank : {0, 2}) {
    ASSERT_EQ(sinks_[rank]->events.size(), 1u);
    EXPECT_EQ(sinks_[rank]->events[0].kind(), v1::Event::RESTART);
    EXPECT_EQ(sinks_[rank]->events[0].attempt(), 1);
    EXPECT_THAT(sinks_[rank]->events[0].root_cause().message(), HasSubstr("machine 1 lost"));
  }
  Join(2, kT0 + absl::Seconds(2.1));
  EXPECT_FALSE(Take(2).has_value());  // machine 0 survived too: waited for
  Join(0, kT0 + absl::Seconds(2.2));  // every survivor in: no last call
  const v1::JoinResponse m0 = Joined(0);
  const v1::JoinResponse m2 = Joined(2);
  ExpectSurvivors0And2(m0, m2);
  EXPECT_NE(m0.master_port(), 29500);  // a new MASTER_PORT for the new generation
  EXPECT_EQ(m0.membership(),
            "machine 1 (host host1) left: lost: its connection to the rendezvous server closed");
}

TEST_F(ElasticTest, ASurvivorThatDoesNotRejoinIsLeftOutAfterTheSurvivorWait) {
  Start(1, 3, 3);
  FirstGeneration({0, 1, 2});
  coordinator_->WatchBroken(watch_ids_[2], kT0 + absl::Seconds(2));
  Join(0, kT0 + absl::Seconds(2.1));
  EXPECT_EQ(coordinator_->Tick(kT0 + absl::Seconds(3)), kT0 + absl::Seconds(5.1));
  EXPECT_FALSE(Take(0).has_value());
  coordinator_->Tick(kT0 + absl::Seconds(5.1));
  const v1::JoinResponse m0 = Joined(0);
  EXPECT_EQ(m0.group_world_size(), 1);
  EXPECT_THAT(m0.membership(), HasSubstr("machine 1 (host host1) left: it did not rejoin"));
}

TEST_F(ElasticTest, AMachineThatStartsLaterJoinsAtTheNextGenerationUncounted) {
  Start(1, 3, 0);
  FirstGeneration({0, 2});
  Join(1, kT0 + absl::Seconds(4));
  ASSERT_EQ(sinks_[0]->events.size(), 1u);
  EXPECT_EQ(sinks_[0]->events[0].kind(), v1::Event::RESTART);
  EXPECT_THAT(sinks_[0]->events[0].root_cause().message(),
              HasSubstr("machine 1 (host host1) joined"));
  Join(0, kT0 + absl::Seconds(4.1));
  Join(2, kT0 + absl::Seconds(4.2));
  const v1::JoinResponse m0 = Joined(0);
  const v1::JoinResponse m1 = Joined(1);
  const v1::JoinResponse m2 = Joined(2);
  EXPECT_EQ(m0.world_size(), 6);
  EXPECT_EQ(m1.group_rank(), 1);  // machine_rank order: survivors keep theirs relative
  EXPECT_EQ(m2.group_rank(), 2);
  EXPECT_EQ(m1.base_rank(), 2);
  EXPECT_EQ(m1.restart_count(), 0);  // max_restarts 0 and still going: joins are free
  EXPECT_EQ(m0.membership(), "machine 1 (host host1) joined");
}

TEST_F(ElasticTest, AJoinerWhoseConfigDiffersIsRefusedAndTheGenerationRunsOn) {
  Start(1, 3, 0);
  FirstGeneration({0, 2});
  Join(1, kT0 + absl::Seconds(4), "fp16");
  auto refused = Take(1);
  ASSERT_TRUE(refused.has_value());
  ASSERT_FALSE(refused->ok());
  EXPECT_THAT(refused->status().message(), HasSubstr("mixed_precision"));
  EXPECT_TRUE(sinks_[0]->events.empty());  // no restart for a machine that cannot join
}

TEST_F(ElasticTest, FourLeaveRejoinCyclesEndOnTheFourthWithMaxRestartsThree) {
  Start(1, 2, 3);
  FirstGeneration({0, 1});
  absl::Time now = kT0 + absl::Seconds(2);
  for (int cycle = 1; cycle <= 4; ++cycle) {
    coordinator_->WatchBroken(watch_ids_[1], now);
    const v1::Event& event = sinks_[0]->events.back();
    if (cycle == 4) {
      EXPECT_EQ(event.kind(), v1::Event::ABORT);
      EXPECT_THAT(event.root_cause().message(),
                  HasSubstr("machine 1 lost: its connection to the rendezvous server closed"));
      EXPECT_THAT(event.root_cause().message(),
                  HasSubstr("restart budget spent: max_restarts 3, 3 restarts used"));
      break;
    }
    ASSERT_EQ(event.kind(), v1::Event::RESTART) << "cycle " << cycle;
    Join(0, now);
    EXPECT_EQ(Joined(0).restart_count(), cycle);
    Join(1, now + absl::Seconds(1));  // it comes back (a new agent): a join, not counted
    Join(0, now + absl::Seconds(1));
    EXPECT_EQ(Joined(0).restart_count(), cycle);
    EXPECT_EQ(Joined(1).group_world_size(), 2);
    now += absl::Seconds(5);
  }
}

TEST_F(ElasticTest, BelowMinWaitsRdzvTimeoutForAReplacementThenNamesTheLoss) {
  Start(2, 2, 3);
  FirstGeneration({0, 1});
  coordinator_->WatchBroken(watch_ids_[1], kT0 + absl::Seconds(2));
  Join(0, kT0 + absl::Seconds(2));
  coordinator_->Tick(kT0 + absl::Seconds(31));
  EXPECT_FALSE(Take(0).has_value());  // still waiting for a replacement
  coordinator_->Tick(kT0 + absl::Seconds(32));
  auto result = Take(0);
  ASSERT_TRUE(result.has_value());
  ASSERT_FALSE(result->ok());
  EXPECT_TRUE(absl::IsDeadlineExceeded(result->status()));
  EXPECT_THAT(result->status().message(),
              HasSubstr("generation 1 has 1 machine (machine_rank 0), fewer than min_machines 2"));
  EXPECT_THAT(result->status().message(),
              HasSubstr("root cause: machine 1 lost: its connection to the rendezvous server"));
}

TEST_F(ElasticTest, AReplacementBelowMinCompletesTheGeneration) {
  Start(2, 2, 3);
  FirstGeneration({0, 1});
  coordinator_->WatchBroken(watch_ids_[1], kT0 + absl::Seconds(2));
  Join(0, kT0 + absl::Seconds(2));
  Join(1, kT0 + absl::Seconds(20));  // the replacement
  EXPECT_EQ(Joined(0).group_world_size(), 2);
  EXPECT_EQ(Joined(1).restart_count(), 1);
}

TEST_F(ElasticTest, LosingMachineZeroEndsTheJob) {
  Start(1, 2, 3);
  FirstGeneration({0, 1});
  coordinator_->WatchBroken(watch_ids_[0], kT0 + absl::Seconds(2));
  ASSERT_EQ(sinks_[1]->events.size(), 1u);
  EXPECT_EQ(sinks_[1]->events[0].kind(), v1::Event::ABORT);
}

TEST_F(ElasticTest, AFailureRestartsEveryMachineAndCounts) {
  Start(1, 2, 3);
  FirstGeneration({0, 1});
  v1::ReportRequest r;
  r.set_run_id("r1");
  r.set_machine_rank(1);
  r.set_attempt(0);
  r.set_kind(v1::ReportRequest::RESTART);
  r.mutable_cause()->set_message("rank 3 exited 1");
  r.set_machine_secret(secrets_[1]);
  ASSERT_TRUE(coordinator_->Report(r, kT0 + absl::Seconds(2)).ok());
  ASSERT_EQ(sinks_[0]->events.size(), 1u);
  EXPECT_EQ(sinks_[0]->events[0].kind(), v1::Event::RESTART);
  Join(0, kT0 + absl::Seconds(3));
  EXPECT_FALSE(Take(0).has_value());  // machine 1 is alive: waited for
  Join(1, kT0 + absl::Seconds(3));
  const v1::JoinResponse m1 = Joined(1);
  EXPECT_EQ(m1.restart_count(), 1);
  EXPECT_EQ(m1.group_world_size(), 2);
  EXPECT_EQ(m1.membership(), "");  // the same machines: no membership change
}

}  // namespace
}  // namespace accel::rendezvous
