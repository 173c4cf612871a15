// FindRendezvousToken: the order of the token sources, and a multi-machine job without a token
// refused unless it opts out by name.
#include "launcher/agent/rendezvous_token.h"

#include <stdlib.h>
#include <sys/stat.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kFromFile[] = "a50e0d983d4a23fe178306068bf5a1e8dd75c27461b81a33605dd880c664f868";
constexpr char kFromEnv[] = "4fc09932486842a616ca8480787a6727f5d9c699e1c2bc648526841172eaf863";

class RendezvousTokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("ACCEL_RDZV_TOKEN");
    token_file_ = dir_.Write("rdzv_token", std::string(kFromFile) + "\n");
    ::chmod(token_file_.c_str(), 0600);
    config_.num_machines = 2;
    config_.num_processes = 2;
    config_.main_process_ip = "10.0.0.1";
    config_.main_process_port = 29500;
  }
  void TearDown() override { ::unsetenv("ACCEL_RDZV_TOKEN"); }

  testing::TempDir dir_;
  std::string token_file_;
  Config config_;
};

TEST_F(RendezvousTokenTest, TheEnvironmentComesFirstThenTheFile) {
  config_.rdzv_token_file = token_file_;
  ::setenv("ACCEL_RDZV_TOKEN", kFromEnv, 1);
  absl::StatusOr<RendezvousToken> token = FindRendezvousToken(config_, /*dry_run=*/false);
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(token->token, kFromEnv);
  EXPECT_EQ(token->source, "ACCEL_RDZV_TOKEN");
  ::unsetenv("ACCEL_RDZV_TOKEN");
  token = FindRendezvousToken(config_, /*dry_run=*/false);
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(token->token, kFromFile);
  EXPECT_EQ(token->source, "rdzv_token_file " + token_file_);
  EXPECT_THAT(token->warnings, IsEmpty());
}

TEST_F(RendezvousTokenTest, AMultiMachineJobWithoutATokenIsRefusedSayingHowToGetOne) {
  absl::StatusOr<RendezvousToken> token = FindRendezvousToken(config_, /*dry_run=*/false);
  ASSERT_EQ(token.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(token.status().message(), HasSubstr("a job on 2 machines needs a rendezvous token"));
  EXPECT_THAT(token.status().message(), HasSubstr("10.0.0.1:29500"));
  EXPECT_THAT(token.status().message(), HasSubstr("Run `accel-launch config`"));
  EXPECT_THAT(token.status().message(), HasSubstr("rdzv_insecure: true"));
}

TEST_F(RendezvousTokenTest, OptingOutByNameRunsWithoutATokenAndSaysSo) {
  config_.rdzv_insecure = true;
  absl::StatusOr<RendezvousToken> token = FindRendezvousToken(config_, /*dry_run=*/false);
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(token->token, "");
  ASSERT_EQ(token->warnings.size(), 1u);
  EXPECT_THAT(token->warnings[0], HasSubstr("anyone who reaches it can join the job"));
  config_.rdzv_token_file = token_file_;  // a token, when there is one, is still used
  EXPECT_EQ(FindRendezvousToken(config_, /*dry_run=*/false)->token, kFromFile);
}

TEST_F(RendezvousTokenTest, OneMachineGetsAFreshTokenEveryTime) {
  config_.num_machines = 1;
  absl::StatusOr<RendezvousToken> a = FindRendezvousToken(config_, /*dry_run=*/false);
  absl::StatusOr<RendezvousToken> b = FindRendezvousToken(config_, /*dry_run=*/false);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->token.size(), 64u);
  EXPECT_NE(a->token, b->token);
}

TEST_F(RendezvousTokenTest, AnUnsafeTokenFileOrAWeakTokenIsRefused) {
  ::chmod(token_file_.c_str(), 0640);
  config_.rdzv_token_file = token_file_;
  absl::StatusOr<RendezvousToken> open = FindRendezvousToken(config_, /*dry_run=*/false);
  EXPECT_EQ(open.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(open.status().message(), HasSubstr("chmod 600 " + token_file_));
  config_.rdzv_token_file = token_file_ + ".missing";
  EXPECT_EQ(FindRendezvousToken(config_, /*dry_run=*/false).status().code(),
            absl::StatusCode::kNotFound);
  ::setenv("ACCEL_RDZV_TOKEN", "short", 1);
  absl::StatusOr<RendezvousToken> weak = FindRendezvousToken(config_, /*dry_run=*/false);
  EXPECT_EQ(weak.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(weak.status().message(), HasSubstr("ACCEL_RDZV_TOKEN is too weak"));
  // Long enough for a character count, made up all the same: refused, with the command to run.
  ::setenv("ACCEL_RDZV_TOKEN", "password-password-password-passw", 1);
  weak = FindRendezvousToken(config_, /*dry_run=*/false);
  EXPECT_EQ(weak.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(weak.status().message(), HasSubstr("accel-launch token"));
}

}  // namespace
}  // namespace accel::launcher
