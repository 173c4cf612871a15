// KvTable: size limits, namespaces, waits and atomicity.
#include "rendezvous/store/kv_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "common/defaults.h"
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
  constexpr std::int64_t kOverhead = defaults::kStoreEntryOverheadBytes;
  ASSERT_TRUE(table.Set("run/0", "k", "vv").ok());
  ASSERT_TRUE(table.Set("run/1", "k", "vvv").ok());
  EXPECT_EQ(table.total_bytes(), (5 + 1 + 2 + kOverhead) + (5 + 1 + 3 + kOverhead));
  table.DropNamespace("run/0");
  EXPECT_EQ(table.total_bytes(), 5 + 1 + 3 + kOverhead);
  EXPECT_EQ(table.Get("run/0", "k").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*table.Get("run/1", "k"), "vvv");
}

// The cap counts every byte the table keeps: with tiny entries the per-entry overhead is most of
// the memory, and the allocator's own count must stay under what the table counted.
TEST(KvTableTest, TheByteCapBoundsTheMemoryTinyEntriesReallyUse) {
  KvLimits limits;
  limits.max_total_bytes = 32 * 1024 * 1024;
  // In use: small chunks plus mmap'ed blocks (the hash table's slot array is one).
  auto allocated = [] {
    const struct mallinfo2 info = ::mallinfo2();
    return info.uordblks + info.hblkhd;
  };
  const std::size_t before = allocated();
  int entries = 0;
  {
    KvTable table{limits};
    while (table.Set("job-0123456789abcdef/0", "k" + std::to_string(entries), "v").ok()) {
      ++entries;
    }
    const std::size_t used = allocated() - before;
    std::printf("%d tiny entries: %zu bytes allocated, %lld counted\n", entries, used,
                static_cast<long long>(table.total_bytes()));
    EXPECT_LE(static_cast<std::int64_t>(used), table.total_bytes());
    EXPECT_LE(table.total_bytes(), limits.max_total_bytes);
  }
  EXPECT_GT(entries, 1000);
}

TEST(KvTableTest, PendingWaitersCountAgainstTheCapAndAreReleasedWithIt) {
  KvLimits limits;
  limits.max_total_bytes = 4096;
  KvTable table{limits};
  std::vector<absl::Status> results;
  int accepted = 0;
  for (int i = 0; i < 100; ++i) {
    const KvTable::WaiterId id =
        table.AddWaiter("ns", {"never" + std::to_string(i)}, absl::InfiniteFuture(),
                        [&](absl::Status s) { results.push_back(s); });
    if (id != 0) ++accepted;
  }
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, 100);
  ASSERT_FALSE(results.empty());
  EXPECT_EQ(results.back().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(results.back().message()),
              ::testing::HasSubstr("over its limit of 4096"));
  table.FailAll(absl::CancelledError("gone"));
  EXPECT_EQ(table.total_bytes(), 0);
}

}  // namespace
}  // namespace accel::rendezvous
