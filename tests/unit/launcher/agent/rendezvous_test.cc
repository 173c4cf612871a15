// Unit tests of the agent's rendezvous glue against FakeRendezvousClient: what Join sends and
// returns, how server events reach the supervisor, what failures are reported, how a finished
// machine waits for the others.
#include "launcher/agent/rendezvous.h"

#include <thread>

#include "common/exit_codes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_rendezvous_client.h"

namespace accel::launcher {
namespace {

using rendezvous::Event;
using rendezvous::FakeRendezvousClient;
using ::testing::HasSubstr;

class AgentRendezvousTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto signals = SignalFd::Create();
    ASSERT_TRUE(signals.ok());
    signals_ = std::make_unique<SignalFd>(*std::move(signals));
    auto abort = AbortChannel::Create();
    ASSERT_TRUE(abort.ok());
    abort_ = *std::move(abort);
    auto fake = std::make_unique<FakeRendezvousClient>();
    fake_ = fake.get();
    rendezvous::JoinRequest request;
    request.run_id = "run7";
    request.machine_rank = 1;
    request.num_machines = 2;
    request.num_processes = 4;
    request.local_processes = 2;
    request.hostname = "node1";
    agent_ = std::make_unique<AgentRendezvous>(std::move(fake), nullptr, request, "10.0.0.1:29500",
                                               "tok", absl::Seconds(5));
    rendezvous::JoinResult result;
    result.attempt = 2;
    result.base_rank = 2;
    result.world_size = 4;
    result.master_addr = "10.0.0.1";
    result.master_port = 29501;
    result.store_endpoint = "10.0.0.1:29500";
    result.self = rendezvous::MachineEntry{1, "node1", "10.0.0.2", 2, 2};
    result.run_id = "run7";
    fake_->SetJoinResult(result);
  }
  bool AbortFired() {
    pollfd p{abort_->fd(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }

  std::unique_ptr<SignalFd> signals_;
  std::unique_ptr<AbortChannel> abort_;
  FakeRendezvousClient* fake_ = nullptr;
  std::unique_ptr<AgentRendezvous> agent_;
};

TEST_F(AgentRendezvousTest, JoinReturnsTheWorkersRendezvousAndStartsWatching) {
  auto joined = agent_->Join(*signals_, *abort_);
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ(joined->base_rank, 2);
  EXPECT_EQ(joined->world_size, 4);
  EXPECT_EQ(joined->master_addr, "10.0.0.1");
  EXPECT_EQ(joined->master_port, 29501);
  EXPECT_EQ(joined->store_endpoint, "10.0.0.1:29500");
  EXPECT_EQ(joined->token, "tok");
  EXPECT_EQ(joined->attempt, 2);
  EXPECT_EQ(joined->local_addr, "10.0.0.2");  // its own entry, without the whole list
  EXPECT_EQ(joined->run_id, "run7");
  EXPECT_TRUE(fake_->watching());
  ASSERT_EQ(fake_->joins().size(), 1u);
  EXPECT_EQ(fake_->joins()[0].run_id, "run7");
  EXPECT_EQ(fake_->joins()[0].local_processes, 2);
  EXPECT_FALSE(fake_->joins()[0].want_machines);
  EXPECT_FALSE(AbortFired());
}

TEST_F(AgentRendezvousTest, JoinErrorNamesTheEndpoint) {
  fake_->SetJoinResult(absl::DeadlineExceededError("machines missing: 0"));
  auto joined = agent_->Join(*signals_, *abort_);
  ASSERT_FALSE(joined.ok());
  EXPECT_EQ(joined.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(std::string(joined.status().message()),
            "join rendezvous at 10.0.0.1:29500: machines missing: 0");
}

TEST_F(AgentRendezvousTest, AbortEventWakesTheSupervisorWithTheRemoteRootCause) {
  ASSERT_TRUE(agent_->Join(*signals_, *abort_).ok());
  Event event;
  event.kind = Event::Kind::kAbort;
  event.root_cause.machine_rank = 0;
  event.root_cause.hostname = "node0";
  event.root_cause.rank = 1;
  event.root_cause.exit_code = 7;
  event.root_cause.message = "local rank 1, pid 4242; error file: NaN loss";
  ASSERT_TRUE(fake_->Deliver(event));
  EXPECT_TRUE(AbortFired());
  EXPECT_EQ(abort_->reason(), "aborted by machine 0 rank 1");
  EXPECT_FALSE(agent_->restart_requested());
  const WorkerFailure remote = agent_->RemoteRootCause();
  EXPECT_EQ(remote.host, "node0");
  EXPECT_EQ(remote.rank, 1);
  EXPECT_EQ(remote.local_rank, 1);
  EXPECT_EQ(remote.pid, 4242);
  EXPECT_EQ(remote.detail, "error file: NaN loss");
  EXPECT_EQ(agent_->RemoteExitCode(), kExitWorkerFailed);  // its own code is in the report
}

TEST_F(AgentRendezvousTest, RestartAndServerLostEvents) {
  ASSERT_TRUE(agent_->Join(*signals_, *abort_).ok());
  Event restart;
  restart.kind = Event::Kind::kRestart;
  restart.attempt = 3;
  ASSERT_TRUE(fake_->Deliver(restart));
  EXPECT_TRUE(agent_->restart_requested());
  EXPECT_EQ(abort_->reason(), "restart (attempt 3)");

  abort_->Reset();
  ASSERT_TRUE(agent_->Join(*signals_, *abort_).ok());  // a new attempt, a new watch
  EXPECT_FALSE(agent_->restart_requested());
  Event lost;
  lost.kind = Event::Kind::kServerLost;
  lost.root_cause.message = "its connection closed (Socket closed)";
  ASSERT_TRUE(fake_->Deliver(lost));
  EXPECT_EQ(agent_->RemoteExitCode(), kExitRendezvous);
  EXPECT_EQ(abort_->reason(),
            "machine 0 (rendezvous host) is gone: its connection closed (Socket closed)");
  const WorkerFailure host = agent_->RemoteRootCause();
  EXPECT_EQ(host.machine_rank, 0);
  EXPECT_EQ(host.rank, -1);
  EXPECT_THAT(FormatFailureReport({host}, "title"),
              HasSubstr("  root cause machine 0 (rendezvous host) is gone: its connection "
                        "closed (Socket closed)\n"));
}

TEST(ServerLostCauseTest, AHostThatStoppedAnsweringIsUnreachableNotGone) {
  Event lost;
  lost.kind = Event::Kind::kServerLost;
  lost.server_unreachable = true;
  lost.root_cause.message = "no answer to heartbeats for 3.0 s";
  EXPECT_EQ(ServerLostCause(lost).message,
            "machine 0 (rendezvous host) is unreachable: no answer to heartbeats for 3.0 s");
}

TEST_F(AgentRendezvousTest, FailuresAreReportedAsAbortOrRestart) {
  WorkerFailure f;
  f.machine_rank = 1;
  f.host = "node1";
  f.rank = 3;
  f.local_rank = 1;
  f.pid = 99;
  f.exit.signal = 9;
  f.error_message = "boom";
  f.stderr_tail = {"first", "last line"};
  agent_->ReportFailure(2, f, /*restart=*/false);
  agent_->ReportFailure(2, f, /*restart=*/true);
  const auto reports = fake_->reports();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].kind, FakeRendezvousClient::Report::Kind::kFailure);
  EXPECT_EQ(reports[1].kind, FakeRendezvousClient::Report::Kind::kRestart);
  EXPECT_EQ(reports[0].attempt, 2);
  EXPECT_EQ(reports[0].cause.rank, 3);
  EXPECT_EQ(reports[0].cause.signal, 9);
  EXPECT_EQ(reports[0].cause.exit_code, 0);
  EXPECT_EQ(reports[0].cause.message,
            "local rank 1, pid 99; error file: boom; last stderr: last line");
  // The other machines' report shows it in the same columns.
  const WorkerFailure back = FromRootCause(reports[0].cause, absl::Now());
  EXPECT_EQ(back.pid, 99);
  EXPECT_EQ(back.local_rank, 1);
  EXPECT_EQ(back.exit.signal, 9);
}

TEST_F(AgentRendezvousTest, AnAgreedHangIsReportedAndTheServerSaysWhetherThisMachineIsEvicted) {
  WorkerFailure f;
  f.machine_rank = 1;
  f.rank = 3;
  f.local_rank = 1;
  f.pid = 99;
  f.detail = "hang: rank 3 (machine 1) is stopped";
  f.agreed_hang = true;
  agent_->ReportHang(2, f);
  ASSERT_EQ(fake_->reports().size(), 1u);
  EXPECT_EQ(fake_->reports()[0].kind, FakeRendezvousClient::Report::Kind::kHang);
  EXPECT_EQ(fake_->reports()[0].cause.rank, 3);
  EXPECT_THAT(fake_->reports()[0].cause.message, HasSubstr("hang: rank 3 (machine 1) is stopped"));

  ASSERT_TRUE(agent_->Join(*signals_, *abort_).ok());
  Event evicted;
  evicted.kind = Event::Kind::kAbort;
  evicted.evicted = true;
  evicted.root_cause.rank = 3;
  ASSERT_TRUE(fake_->Deliver(evicted));
  EXPECT_TRUE(AbortFired());
  EXPECT_TRUE(agent_->evicted());
  EXPECT_FALSE(agent_->restart_requested());

  ASSERT_TRUE(agent_->Join(*signals_, *abort_).ok());  // another machine: the others restart
  Event restart;
  restart.kind = Event::Kind::kRestart;
  restart.attempt = 3;
  ASSERT_TRUE(fake_->Deliver(restart));
  EXPECT_FALSE(agent_->evicted());
  EXPECT_TRUE(agent_->restart_requested());
}

TEST_F(AgentRendezvousTest, FinishedMachineWaitsForDoneOrTheOthersFailure) {
  ASSERT_TRUE(agent_->Join(*signals_, *abort_).ok());
  std::thread server([this] {
    absl::SleepFor(absl::Milliseconds(100));
    Event done;
    done.kind = Event::Kind::kDone;
    fake_->Deliver(done);
  });
  EXPECT_EQ(agent_->FinishDone(2, *signals_, *abort_), 0);
  server.join();
  ASSERT_EQ(fake_->reports().size(), 1u);
  EXPECT_EQ(fake_->reports()[0].kind, FakeRendezvousClient::Report::Kind::kDone);

  abort_->Reset();
  ASSERT_TRUE(agent_->Join(*signals_, *abort_).ok());
  Event abort;
  abort.kind = Event::Kind::kAbort;
  abort.root_cause.rank = 0;
  ASSERT_TRUE(fake_->Deliver(abort));  // arrives before this machine finishes
  EXPECT_EQ(agent_->FinishDone(2, *signals_, *abort_), 1);
}

}  // namespace
}  // namespace accel::launcher

namespace accel::launcher {
namespace {

TEST(MakeJoinRequestTest, SendsTheWorldAfterTheFewerGpusFallbackLikeTheServerExpects) {
  Config c;
  c.distributed_type = DistributedType::kMultiGpu;
  c.num_processes = 4;  // asked for 4, the machine has 2 GPUs
  c.run_id = "r";
  auto plan = MakePlan(c, /*gpus=*/2, "");
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->world_size, 2);
  rendezvous::JoinRequest request = MakeJoinRequest(c, *plan, "host0");
  EXPECT_EQ(request.num_processes, 2);
  EXPECT_EQ(request.local_processes, 2);
  EXPECT_EQ(request.num_machines, 1);
  EXPECT_EQ(request.hostname, "host0");
  EXPECT_EQ(request.config_fingerprint.at("backend"), "nccl");
  EXPECT_EQ(request.config_fingerprint.at("hang_timeout"), "60");
}

}  // namespace
}  // namespace accel::launcher
