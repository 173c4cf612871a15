// The Slurm step token over a real PMI-2 socket (a socketpair to FakePmi2Server): task 0 puts a
// fresh token and everyone reads it back; errors and a fence that never comes have deadlines.
#include "launcher/config/slurm_token.h"

#include <fcntl.h>

#include <map>
#include <string>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/config/pmi2_client.h"
#include "tests/testing/fake_pmi2_server.h"

namespace accel::launcher {
namespace {

using ::testing::ElementsAre;
using testing::FakePmi2Server;
using ::testing::HasSubstr;

FakePmi2Server::Options Task(int rank, int size, std::map<std::string, std::string> kvs = {}) {
  FakePmi2Server::Options options;
  options.rank = rank;
  options.size = size;
  options.kvs = std::move(kvs);
  return options;
}

absl::Time Soon() { return absl::Now() + absl::Seconds(5); }

EnvLookup StepEnv(int fd, int rank) {
  return FixedEnvironment({{"SLURM_JOB_ID", "12"},
                           {"SLURM_STEP_ID", "0"},
                           {"PMI_FD", std::to_string(fd)},
                           {"PMI_RANK", std::to_string(rank)},
                           {"PMI_JOBID", "12.0"}});
}

TEST(Pmi2ClientTest, SpeaksTheProtocolInOrder) {
  FakePmi2Server server(Task(1, 2, {{"k", "v1"}}));
  auto pmi = Pmi2Client::Create(UniqueFd(server.TakeClientFd()), "12.0", 1, Soon());
  ASSERT_TRUE(pmi.ok()) << pmi.status();
  EXPECT_EQ(pmi->rank(), 1);
  EXPECT_EQ(pmi->size(), 2);
  EXPECT_TRUE(pmi->Put("mine", "x", Soon()).ok());
  EXPECT_TRUE(pmi->Fence(Soon()).ok());
  EXPECT_EQ(pmi->Get("k", Soon()).value(), "v1");
  EXPECT_EQ(pmi->Get("absent", Soon()).value(), std::nullopt);
  EXPECT_TRUE(pmi->Finalize(Soon()).ok());
  EXPECT_THAT(server.commands(),
              ElementsAre("init", "fullinit pmijobid=12.0 pmirank=1 threaded=FALSE",
                          "kvs-put key=mine value=x", "kvs-fence", "kvs-get key=k srcid=-1",
                          "kvs-get key=absent srcid=-1", "finalize"));
}

TEST(Pmi2ClientTest, AnErrorRcIsAnError) {
  FakePmi2Server::Options options = Task(0, 1);
  options.fullinit_rc = 3;
  FakePmi2Server server(options);
  auto pmi = Pmi2Client::Create(UniqueFd(server.TakeClientFd()), "", 0, Soon());
  ASSERT_FALSE(pmi.ok());
  EXPECT_THAT(pmi.status().message(), HasSubstr("PMI-2 fullinit: Slurm answered rc=3"));
}

TEST(SlurmStepTokenTest, TaskZeroDrawsTheTokenAndReadsItBack) {
  FakePmi2Server server(Task(0, 1));
  const int fd = server.TakeClientFd();
  auto token = SlurmStepToken(StepEnv(fd, 0), Soon());
  ASSERT_TRUE(token.ok()) << token.status();
  ASSERT_TRUE(token->has_value());
  EXPECT_THAT((*token)->token, ::testing::MatchesRegex("[0-9a-f]{64}"));
  EXPECT_EQ(server.kvs().at(kSlurmTokenKey), (*token)->token);
  EXPECT_EQ((*token)->source, "Slurm PMI-2 (job 12 step 0, task 0 of 1)");
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1) << "the PMI socket is closed after the exchange";
}

TEST(SlurmStepTokenTest, OtherTasksReadTaskZerosToken) {
  const std::string theirs(64, 'c');
  FakePmi2Server server(Task(1, 2, {{kSlurmTokenKey, theirs}}));
  auto token = SlurmStepToken(StepEnv(server.TakeClientFd(), 1), Soon());
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ((*token)->token, theirs);
  for (const std::string& command : server.commands()) {
    EXPECT_THAT(command, ::testing::Not(HasSubstr("kvs-put"))) << "only task 0 puts";
  }
}

TEST(SlurmStepTokenTest, NotUnderASlurmStepWithPmi2) {
  auto none = SlurmStepToken(FixedEnvironment({{"SLURM_JOB_ID", "12"}}), Soon());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_FALSE(SlurmStepToken(FixedEnvironment({{"PMI_FD", "3"}}), Soon())->has_value());
}

TEST(SlurmStepTokenTest, BadOrMissingTokensAreRefused) {
  FakePmi2Server missing(Task(1, 2));
  auto none = SlurmStepToken(StepEnv(missing.TakeClientFd(), 1), Soon());
  EXPECT_THAT(none.status().message(), HasSubstr("task 0 of the step put no token"));
  FakePmi2Server bad(Task(1, 2, {{kSlurmTokenKey, "short"}}));
  auto wrong = SlurmStepToken(StepEnv(bad.TakeClientFd(), 1), Soon());
  EXPECT_THAT(wrong.status().message(), HasSubstr("not 64 hex characters"));
  auto closed = SlurmStepToken(StepEnv(987, 0), Soon());
  EXPECT_THAT(closed.status().message(), HasSubstr("PMI_FD=987 is not open"));
}

TEST(SlurmStepTokenTest, AFenceThatNeverComesEndsAtTheDeadline) {
  FakePmi2Server::Options options = Task(0, 2);
  options.silent_fence = true;
  FakePmi2Server server(options);
  const absl::Time start = absl::Now();
  auto token = SlurmStepToken(StepEnv(server.TakeClientFd(), 0), start + absl::Milliseconds(300));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(token.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(token.status().message(),
              HasSubstr("exchange the rendezvous token over Slurm's PMI-2: not every task"));
  EXPECT_GE(took, absl::Milliseconds(300));
  EXPECT_LT(took, absl::Seconds(2));
}

}  // namespace
}  // namespace accel::launcher
