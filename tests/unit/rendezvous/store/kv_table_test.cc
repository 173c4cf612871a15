// KvTable: size limits, namespaces, waits and atomicity.
#include "rendezvous/store/kv_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "rendezvous/grpc/auth.h"
#include "rendezvous/grpc/token.h"
#include "rendezvous/store/in_memory_store.h"
#include "rendezvous/store/prefix_store.h"

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;

TEST(KvTableTest, WaiterFiresOnceAndDeleteReArmsIt) {
  KvTable table{KvLimits{}};
  int fired = 0;
  absl::Status last;
  KvTable::WaiterId id =
      table.AddWaiter("ns", {"a", "b"}, absl::InfiniteFuture(), [&](absl::Status s) {
        ++fired;
        last = s;
      });
  ASSERT_NE(id, 0u);
  ASSERT_TRUE(table.Set("ns", "a", "1").ok());
  ASSERT_TRUE(*table.Delete("ns", "a"));  // a is missing again
  ASSERT_TRUE(table.Set("ns", "b", "1").ok());
  EXPECT_EQ(fired, 0);
  ASSERT_TRUE(table.Set("other", "a", "1").ok());  // another namespace does not count
  EXPECT_EQ(fired, 0);
  ASSERT_TRUE(table.Set("ns", "a", "1").ok());
  EXPECT_EQ(fired, 1);
  EXPECT_TRUE(last.ok());
  EXPECT_FALSE(table.CancelWaiter(id, absl::CancelledError("x")));
  EXPECT_EQ(table.pending_waiters(), 0u);
}

TEST(KvTableTest, ExpireWaitersFiresOnlyDueOnesAndReturnsNextDeadline) {
  KvTable table{KvLimits{}};
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  std::vector<absl::Status> results;
  table.AddWaiter("ns", {"x"}, t0 + absl::Seconds(1),
                  [&](absl::Status s) { results.push_back(s); });
  table.AddWaiter("ns", {"y"}, t0 + absl::Seconds(5),
                  [&](absl::Status s) { results.push_back(s); });
  EXPECT_EQ(table.ExpireWaiters(t0), t0 + absl::Seconds(1));
  EXPECT_TRUE(results.empty());
  EXPECT_EQ(table.ExpireWaiters(t0 + absl::Seconds(1)), t0 + absl::Seconds(5));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].message(), "wait for store keys: deadline exceeded; still missing: \"x\"");
  table.FailAll(absl::UnavailableError("down"));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(table.ExpireWaiters(t0 + absl::Seconds(9)), absl::InfiniteFuture());
}

TEST(KvTableTest, InvalidWaitsFailAtOnce) {
  KvLimits limits;
  limits.max_keys_per_wait = 2;
  KvTable table{limits};
  absl::Status got;
  EXPECT_EQ(table.AddWaiter("ns", {}, absl::InfiniteFuture(), [&](absl::Status s) { got = s; }),
            0u);
  EXPECT_EQ(got.message(), "wait for store keys: no keys given");
  EXPECT_EQ(table.AddWaiter("ns", {"a", "b", "c"}, absl::InfiniteFuture(),
                            [&](absl::Status s) { got = s; }),
            0u);
  EXPECT_EQ(got.message(), "wait for 3 store keys: more than the limit of 2");
}

TEST(KvTableTest, DropNamespaceFreesItsBytesOnly) {
  KvTable table{KvLimits{}};
  ASSERT_TRUE(table.Set("run/0", "k", "vv").ok());
  ASSERT_TRUE(table.Set("run/1", "k", "vvv").ok());
  EXPECT_EQ(table.total_bytes(), 3 + 4);
  table.DropNamespace("run/0");
  EXPECT_EQ(table.total_bytes(), 4);
  EXPECT_EQ(table.Get("run/0", "k").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*table.Get("run/1", "k"), "vvv");
}

}  // namespace
}  // namespace accel::rendezvous
