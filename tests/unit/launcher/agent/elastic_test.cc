// launcher/agent/elastic: the membership line and the spent-budget line.
#include "launcher/agent/elastic.h"

#include <gtest/gtest.h>

namespace accel::launcher {
namespace {

TEST(ElasticTest, OneLineSaysWhoLeftTheNewWorldTheBudgetAndTheTime) {
  GenerationChange change;
  change.generation = 3;
  change.membership = "machine 1 (host b) left: lost: its connection closed";
  change.old_world = 4;
  change.new_world = 2;
  change.machines = 1;
  change.restart_count = 1;
  change.max_restarts = 3;
  change.took = absl::Milliseconds(412);
  EXPECT_EQ(FormatGenerationChange(change),
            "membership: generation 3: machine 1 (host b) left: lost: its connection closed; "
            "world 4 -> 2 (1 machine); restarts 1 of 3; recovered in 0.41 s");
  change.machines = 2;
  change.new_world = 4;
  EXPECT_NE(FormatGenerationChange(change).find("world 4 -> 4 (2 machines)"), std::string::npos);
  change.old_world = 0;  // the joiner's own first generation
  change.membership = "machine 1 (host b) joined";
  EXPECT_EQ(FormatGenerationChange(change),
            "membership: generation 3: machine 1 (host b) joined; world 4 (2 machines); "
            "restarts 1 of 3; joined in 0.41 s");
}

TEST(ElasticTest, TheBudgetIsNamedOnlyWhenSpent) {
  EXPECT_EQ(DescribeSpentBudget(0, 0), "");  // no restarts allowed: nothing was spent
  EXPECT_EQ(DescribeSpentBudget(2, 3), "");
  EXPECT_EQ(DescribeSpentBudget(3, 3),
            "restart budget spent: max_restarts 3, 3 restarts used by the job (lost machines and "
            "failures count, on every machine; machines joining do not)");
}

TEST(ElasticTest, AnEvictedMachineSaysWhoAndWhy) {
  EXPECT_EQ(FormatEviction(1, "b", 3),
            "membership: machine 1 (host b) evicted: the job's hang verdict names its rank 3; the "
            "other machines go on without it");
  EXPECT_EQ(FormatEviction(2, "", 5).substr(0, 31), "membership: machine 2 (host ?) ");
  EXPECT_EQ(FormatEviction(2, "c", 5, /*failed=*/true),
            "membership: machine 2 (host c) evicted: its rank 5 failed; the other machines go on "
            "without it");
}

}  // namespace
}  // namespace accel::launcher
