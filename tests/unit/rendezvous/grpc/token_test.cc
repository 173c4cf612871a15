// The rendezvous token: generation, token files (read, permissions, write) and comparison.
#include "rendezvous/grpc/token.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "rendezvous/grpc/auth.h"
#include "tests/testing/files.h"

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

TEST(TokenTest, ReadTokenFileTakesTheFirstLineAndRefusesEmptyOrMissingFiles) {
  testing::TempDir dir;
  const std::string path = dir.Write("rdzv_token", "  from-file \nsecond line\n");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  absl::StatusOr<TokenFile> read = ReadTokenFile(path, /*strict=*/true);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->token, "from-file");
  EXPECT_EQ(read->warning, "");
  EXPECT_EQ(ReadTokenFile(path + ".missing", false).status().code(), absl::StatusCode::kNotFound);
  const std::string empty = dir.Write("empty", "");
  EXPECT_EQ(ReadTokenFile(empty, false).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadTokenFile(dir.path(), false).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TokenTest, AFileOthersMayReadIsRefusedUnderStrictAndWarnedAboutOtherwise) {
  testing::TempDir dir;
  const std::string path = dir.Write("rdzv_token", "secret\n");
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  absl::StatusOr<TokenFile> lax = ReadTokenFile(path, /*strict=*/false);
  ASSERT_TRUE(lax.ok()) << lax.status();
  EXPECT_EQ(lax->token, "secret");
  EXPECT_THAT(lax->warning, HasSubstr("may be read by group or others (mode 0644)"));
  EXPECT_THAT(lax->warning, HasSubstr("chmod 600 " + path));
  absl::StatusOr<TokenFile> strict = ReadTokenFile(path, /*strict=*/true);
  EXPECT_EQ(strict.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(strict.status().message(), HasSubstr("(refused: strict)"));
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);  // group alone is enough to refuse
  EXPECT_FALSE(ReadTokenFile(path, /*strict=*/true).ok());
}

TEST(TokenTest, WriteTokenFileMakesAnOwnerOnlyFileAndKeepsAnExistingToken) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/rdzv_token";
  const mode_t old_umask = ::umask(0);  // a lax umask must not widen the file
  absl::StatusOr<std::string> first = WriteTokenFile(path);
  ::umask(old_umask);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->size(), 64u);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(testing::ReadFile(path), *first + "\n");
  // Run again (say, `accel-launch config` once more): the copies elsewhere stay valid.
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  absl::StatusOr<std::string> second = WriteTokenFile(path);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*second, *first);
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
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
