// join/membership: when a generation completes, how a change is described, the budget and the
// below-MIN messages.
#include "rendezvous/join/membership.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'000'000);

// Every (waiting, survivors) case of a 2:4 job against the rule written out longhand.
TEST(MembershipTest, CompletesAtFollowsTheRulesForEveryCase) {
  ElasticOptions options;
  options.enabled = true;
  options.min_machines = 2;
  options.last_call = absl::Seconds(1);
  options.survivor_wait = absl::Seconds(3);
  for (int waiting = 0; waiting <= 4; ++waiting) {
    for (int expected = 0; expected <= 1; ++expected) {
      for (int in = 0; in <= expected; ++in) {
        Forming forming;
        forming.waiting = waiting;
        forming.survivors_expected = expected == 1;
        forming.survivors_in = in == 1;
        forming.min_reached = waiting >= 2 ? kT0 : absl::InfiniteFuture();
        absl::Time want = absl::InfiniteFuture();
        if (waiting == 4) {
          want = absl::InfinitePast();
        } else if (waiting >= 2) {
          want = in == 1 ? absl::InfinitePast()
                         : kT0 + (expected == 1 ? absl::Seconds(3) : absl::Seconds(1));
        }
        EXPECT_EQ(CompletesAt(options, 4, forming), want)
            << "waiting " << waiting << " expected " << expected << " in " << in;
      }
    }
  }
}

TEST(MembershipTest, TheLastCallIsAtLeastItsOwnLengthAfterARestart) {
  ElasticOptions options;
  options.min_machines = 1;
  options.last_call = absl::Seconds(5);
  options.survivor_wait = absl::Seconds(3);
  Forming forming{1, true, false, kT0};
  EXPECT_EQ(CompletesAt(options, 2, forming), kT0 + absl::Seconds(5));
}

TEST(MembershipTest, DescribesWhoLeftWhyAndWhoJoined) {
  const std::map<int, std::string> before = {{0, "a"}, {1, "b"}, {2, "c"}};
  const std::map<int, std::string> after = {{0, "a"}, {2, "c"}, {3, "d"}};
  EXPECT_EQ(DescribeChange(before, after, {{1, "lost: its connection closed"}}),
            "machine 1 (host b) left: lost: its connection closed; machine 3 (host d) joined");
  EXPECT_EQ(DescribeChange(before, {{0, "a"}}, {}),
            "machine 1 (host b) left: it did not rejoin; machine 2 (host c) left: it did not "
            "rejoin");
  EXPECT_EQ(DescribeChange(before, before, {}), "");
  EXPECT_EQ(NameMachine(4, ""), "machine 4 (host ?)");
}

TEST(MembershipTest, NamesTheBudgetAndTheLossBelowMin) {
  EXPECT_EQ(BudgetSpentMessage("machine 1 lost: x", 3, 3),
            "machine 1 lost: x; restart budget spent: max_restarts 3, 3 restarts used (lost "
            "machines and failures count, machines joining do not)");
  ElasticOptions options;
  options.min_machines = 2;
  const absl::Status below =
      BelowMinError("r1", 2, options, absl::Seconds(10), {0}, "machine 1 lost: gone");
  EXPECT_TRUE(absl::IsDeadlineExceeded(below));
  EXPECT_EQ(below.message(),
            "join rendezvous run_id=r1: generation 2 has 1 machine (machine_rank 0), fewer than "
            "min_machines 2, and no replacement joined within rdzv_timeout 10s; root cause: "
            "machine 1 lost: gone");
}

}  // namespace
}  // namespace accel::rendezvous
