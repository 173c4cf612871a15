// The rendezvous token: generation, token files (read, permissions, write) and comparison.
#include "rendezvous/grpc/token.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "absl/strings/str_cat.h"
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

constexpr char kStrong[] = "9f1c27e0b4d85a63c2e97f10d84b5a3e6f0c92d7b1e48a5c";  // 48 hex: 192 bits

TEST(TokenTest, ReadTokenFileTakesTheFirstLineAndRefusesEmptyOrMissingFiles) {
  testing::TempDir dir;
  const std::string path = dir.Write("rdzv_token", absl::StrCat("  ", kStrong, " \nsecond\n"));
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  absl::StatusOr<TokenFile> read = ReadTokenFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->token, kStrong);
  EXPECT_EQ(ReadTokenFile(path + ".missing").status().code(), absl::StatusCode::kNotFound);
  const std::string empty = dir.Write("empty", "");
  ASSERT_EQ(::chmod(empty.c_str(), 0600), 0);
  EXPECT_EQ(ReadTokenFile(empty).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadTokenFile(dir.path()).status().code(), absl::StatusCode::kInvalidArgument);
}

// Every mode that lets group or others read (or write) the file is refused, with the chmod.
TEST(TokenTest, AFileGroupOrOthersMayReadIsRefusedWithTheChmodToRun) {
  testing::TempDir dir;
  const std::string path = dir.Write("rdzv_token", absl::StrCat(kStrong, "\n"));
  for (mode_t mode = 0600; mode <= 0777; ++mode) {
    if ((mode & 0700) != 0600) continue;  // the owner can read it in every case tried
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
    absl::StatusOr<TokenFile> read = ReadTokenFile(path);
    if ((mode & 077) == 0) {
      EXPECT_TRUE(read.ok()) << read.status();
      continue;
    }
    EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition) << std::oct << mode;
    EXPECT_THAT(read.status().message(), HasSubstr("chmod 600 " + path));
    EXPECT_THAT(read.status().message(), HasSubstr("(refused)"));
  }
}

// A weak token in a file is refused like any other (token_strength_test.cc: the rule).
TEST(TokenTest, WeakTokenFilesAreRefused) {
  testing::TempDir dir;
  const std::string path = dir.Write("rdzv_token", "s3cret\n");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  absl::StatusOr<TokenFile> weak = ReadTokenFile(path);
  EXPECT_EQ(weak.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(weak.status().message(), HasSubstr("accel-launch token"));
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
