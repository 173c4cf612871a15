// Store semantics: InMemoryStore, PrefixStore and KvTable limits, waits and atomicity.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "rendezvous/auth.h"
#include "rendezvous/in_memory_store.h"
#include "rendezvous/kv_table.h"
#include "rendezvous/prefix_store.h"
#include "rendezvous/token.h"

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
  limits.max_total_bytes = 40;
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
  ASSERT_TRUE(store.Set("a", std::string(16, 'x')).ok());  // 17 bytes
  ASSERT_TRUE(store.Set("b", std::string(16, 'x')).ok());  // 34 bytes
  status = store.Set("c", std::string(16, 'x'));
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(),
            "set store key \"c\": the store would hold 51 bytes, over its limit of 40 bytes");
  ASSERT_TRUE(*store.Delete("a"));  // frees 17 bytes
  EXPECT_TRUE(store.Set("c", std::string(16, 'x')).ok());
}

TEST(PrefixStoreTest, NamespacesKeysAndStripsThePrefixFromErrors) {
  InMemoryStore base;
  PrefixStore a("job/0", base);
  PrefixStore b("job/1", base);
  ASSERT_TRUE(a.Set("id", "A").ok());
  ASSERT_TRUE(b.Set("id", "B").ok());
  EXPECT_EQ(*base.Get("job/0/id", absl::ZeroDuration()), "A");
  EXPECT_EQ(*a.Get("id", absl::ZeroDuration()), "A");
  EXPECT_EQ(*b.Get("id", absl::ZeroDuration()), "B");
  EXPECT_EQ(*a.Add("n", 2), 2);
  EXPECT_EQ(*a.CompareSet("id", "A", "A2"), "A2");
  EXPECT_TRUE(*a.Delete("id"));
  EXPECT_EQ(*b.Get("id", absl::ZeroDuration()), "B");
  absl::Status status = a.Wait({"x"}, absl::Milliseconds(10));
  EXPECT_EQ(status.message(), "wait for store keys: deadline exceeded; still missing: \"x\"");
}

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

TEST(TokenTest, GeneratedTokensAreLongHexAndDistinct) {
  absl::StatusOr<std::string> a = GenerateToken();
  absl::StatusOr<std::string> b = GenerateToken();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 64u);
  EXPECT_EQ(a->find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(*a, *b);
}

TEST(TokenTest, LoadTokenPrefersTheFileThenTheEnvironment) {
  const std::string path = ::testing::TempDir() + "/rdzv_token";
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("  from-file \nsecond line\n", f);
  std::fclose(f);
  ::setenv("ACCEL_RDZV_TOKEN", "from-env", 1);
  EXPECT_EQ(*LoadToken(path), "from-file");
  EXPECT_EQ(*LoadToken(""), "from-env");
  ::unsetenv("ACCEL_RDZV_TOKEN");
  EXPECT_EQ(*LoadToken(""), "");
  EXPECT_EQ(LoadToken(path + ".missing").status().code(), absl::StatusCode::kNotFound);
  f = std::fopen(path.c_str(), "w");
  std::fclose(f);
  EXPECT_EQ(LoadToken(path).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TokenTest, TokenMatchesOnlyTheExactToken) {
  EXPECT_TRUE(TokenMatches("abc", "abc"));
  EXPECT_FALSE(TokenMatches("abc", "abd"));
  EXPECT_FALSE(TokenMatches("abc", "ab"));
  EXPECT_FALSE(TokenMatches("abc", "abcd"));
  EXPECT_FALSE(TokenMatches("abc", ""));
  EXPECT_TRUE(TokenMatches("", ""));
}

}  // namespace
}  // namespace accel::rendezvous
