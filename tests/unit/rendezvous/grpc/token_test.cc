// The rendezvous token: generation, loading from a file or the environment, and errors.
#include "rendezvous/grpc/token.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "rendezvous/grpc/auth.h"
#include "rendezvous/store/in_memory_store.h"
#include "rendezvous/store/kv_table.h"
#include "rendezvous/store/prefix_store.h"

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;

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
