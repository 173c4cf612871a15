// InMemoryStore semantics: set/get/add/wait/delete, timeouts and concurrent waiters.
#include "rendezvous/store/in_memory_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "common/defaults.h"
#include "rendezvous/grpc/auth.h"
#include "rendezvous/grpc/token.h"
#include "rendezvous/store/kv_table.h"
#include "rendezvous/store/prefix_store.h"

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;

TEST(InMemoryStoreTest, SetThenGetReturnsValueAndOverwrites) {
  InMemoryStore store;
  ASSERT_TRUE(store.Set("k", "v1").ok());
  EXPECT_EQ(*store.Get("k", absl::ZeroDuration()), "v1");
  ASSERT_TRUE(store.Set("k", std::string("a\0b", 3)).ok());
  EXPECT_EQ(*store.Get("k", absl::ZeroDuration()), std::string("a\0b", 3));
}

TEST(InMemoryStoreTest, GetWithoutWaitIsNotFound) {
  InMemoryStore store;
  absl::StatusOr<std::string> value = store.Get("missing", absl::ZeroDuration());
  EXPECT_EQ(value.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(value.status().message(), "get store key \"missing\": not set");
}

TEST(InMemoryStoreTest, GetTimesOutAtItsDeadline) {
  InMemoryStore store;
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> value = store.Get("late", absl::Milliseconds(200));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(value.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(value.status().message(),
            "get store key \"late\": wait for store keys: deadline exceeded; still missing: "
            "\"late\"");
  EXPECT_GE(took, absl::Milliseconds(200));
  EXPECT_LT(took, absl::Milliseconds(450));  // slack for a loaded machine
}

TEST(InMemoryStoreTest, GetWakesWhenAnotherThreadSets) {
  InMemoryStore store;
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(50));
    ASSERT_TRUE(store.Set("k", "v").ok());
  });
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> value = store.Get("k", absl::Seconds(10));
  setter.join();
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, "v");
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST(InMemoryStoreTest, WaitNamesOnlyTheMissingKeys) {
  InMemoryStore store;
  ASSERT_TRUE(store.Set("a", "1").ok());
  const absl::Time start = absl::Now();
  absl::Status status = store.Wait({"a", "b", "c"}, absl::Milliseconds(100));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(100));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(status.message(),
            "wait for store keys: deadline exceeded; still missing: \"b\", \"c\"");
  ASSERT_TRUE(store.Set("b", "2").ok());
  ASSERT_TRUE(store.Set("c", "3").ok());
  EXPECT_TRUE(store.Wait({"a", "b", "c"}, absl::ZeroDuration()).ok());
}

TEST(InMemoryStoreTest, AddIsAtomicUnderConcurrency) {
  InMemoryStore store;
  constexpr int kThreads = 8;
  constexpr int kAdds = 2000;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kAdds; ++i) {
        if (!store.Add("counter", 1).ok()) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(*store.Add("counter", 0), kThreads * kAdds);
  EXPECT_EQ(*store.Get("counter", absl::ZeroDuration()), std::to_string(kThreads * kAdds));
}

TEST(InMemoryStoreTest, AddRejectsNonIntegerAndOverflow) {
  InMemoryStore store;
  ASSERT_TRUE(store.Set("text", "abc").ok());
  EXPECT_EQ(store.Add("text", 1).status().message(),
            "add to store key \"text\": its value is not an integer");
  ASSERT_TRUE(store.Add("big", INT64_MAX).ok());
  EXPECT_EQ(store.Add("big", 1).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(*store.Add("neg", -5), -5);
}

TEST(InMemoryStoreTest, DeleteReportsWhetherKeyExisted) {
  InMemoryStore store;
  ASSERT_TRUE(store.Set("k", "v").ok());
  EXPECT_TRUE(*store.Delete("k"));
  EXPECT_FALSE(*store.Delete("k"));
  EXPECT_EQ(store.Get("k", absl::ZeroDuration()).status().code(), absl::StatusCode::kNotFound);
}

TEST(InMemoryStoreTest, CompareSetSwapsOnlyOnMatch) {
  InMemoryStore store;
  EXPECT_EQ(*store.CompareSet("k", "", "first"), "first");   // absent → set
  EXPECT_EQ(*store.CompareSet("k", "", "second"), "first");  // present → unchanged
  EXPECT_EQ(*store.CompareSet("k", "wrong", "x"), "first");
  EXPECT_EQ(*store.CompareSet("k", "first", "third"), "third");
  EXPECT_EQ(*store.Get("k", absl::ZeroDuration()), "third");
}

TEST(InMemoryStoreTest, LimitsAreEnforcedWithClearMessages) {
  KvLimits limits;
  limits.max_key_bytes = 8;
  limits.max_value_bytes = 16;
  // An entry counts its key and value plus the per-entry overhead: 1 + 16 + 256 = 273 bytes.
  static_assert(defaults::kStoreEntryOverheadBytes == 256);
  limits.max_total_bytes = 600;
  InMemoryStore store(limits);
  absl::Status status = store.Set("", "v");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "store key: the key is empty");
  status = store.Set("123456789", "v");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "store key of 9 bytes: longer than the limit of 8 bytes");
  status = store.Set("k", std::string(17, 'x'));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "set store key \"k\": value of 17 bytes is over the limit of 16 bytes");
  ASSERT_TRUE(store.Set("a", std::string(16, 'x')).ok());  // 273 bytes
  ASSERT_TRUE(store.Set("b", std::string(16, 'x')).ok());  // 546 bytes
  status = store.Set("c", std::string(16, 'x'));
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(),
            "set store key \"c\": the store would hold 819 bytes, over its limit of 600 bytes");
  ASSERT_TRUE(*store.Delete("a"));  // frees 273 bytes
  EXPECT_TRUE(store.Set("c", std::string(16, 'x')).ok());
}

}  // namespace
}  // namespace accel::rendezvous
