// PrefixStore: keys are namespaced over the wrapped store.
#include "rendezvous/store/prefix_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "rendezvous/grpc/auth.h"
#include "rendezvous/grpc/token.h"
#include "rendezvous/store/in_memory_store.h"
#include "rendezvous/store/kv_table.h"

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;

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

}  // namespace
}  // namespace accel::rendezvous
