#include "worker/src/ddp/bucket_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace accel::worker {
namespace {

using ::testing::ElementsAre;

std::vector<ParamInfo> Sizes(std::vector<std::int64_t> bytes, int key = 0) {
  std::vector<ParamInfo> out;
  for (auto b : bytes) out.push_back({b, key});
  return out;
}

TEST(BucketPlanTest, ReverseOrderFirstBucketSmallThenLarge) {
  // 6 params of 400 bytes; first cap 1000, then 2000.
  auto plan = PlanBuckets(Sizes({400, 400, 400, 400, 400, 400}), 1000, 2000);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_THAT(plan[0], ElementsAre(5, 4, 3));  // 1200 >= 1000 closes the first bucket
  EXPECT_THAT(plan[1], ElementsAre(2, 1, 0));  // the rest (1200 < 2000)
}

TEST(BucketPlanTest, OversizedParamGetsItsOwnBucket) {
  auto plan = PlanBuckets(Sizes({100, 5000, 100}), 1000, 1000);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_THAT(plan[0], ElementsAre(2, 1));
  EXPECT_THAT(plan[1], ElementsAre(0));
}

TEST(BucketPlanTest, DtypeChangeClosesBucket) {
  std::vector<ParamInfo> params{{100, 1}, {100, 1}, {100, 2}, {100, 2}};
  auto plan = PlanBuckets(params, 1 << 20, 1 << 20);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_THAT(plan[0], ElementsAre(3, 2));
  EXPECT_THAT(plan[1], ElementsAre(1, 0));
}

TEST(BucketPlanTest, EveryParamExactlyOnce) {
  std::vector<std::int64_t> bytes;
  for (int i = 0; i < 97; ++i) bytes.push_back(4 * (1 + (i * 37) % 1000));
  auto plan = PlanBuckets(Sizes(bytes), 4096, 32768);
  std::vector<int> seen(bytes.size(), 0);
  std::size_t expected_next = bytes.size();
  for (const auto& bucket : plan) {
    ASSERT_FALSE(bucket.empty());
    for (std::size_t p : bucket) {
      ++seen[p];
      EXPECT_EQ(p, --expected_next);  // strictly reverse registration order
    }
  }
  for (int count : seen) EXPECT_EQ(count, 1);
}

TEST(BucketPlanTest, EmptyModuleHasNoBuckets) { EXPECT_TRUE(PlanBuckets({}, 1000, 1000).empty()); }

}  // namespace
}  // namespace accel::worker
