// Agents in separate processes against a real server on 127.0.0.1: random start order and
// delays, duplicate rank, a missing machine, a SIGKILLed agent, a wrong token, done.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/exit_codes.h"
#include "rendezvous/grpc/server.h"
#include "tests/testing/rdzv_process.h"

namespace accel::rendezvous {
namespace {

using ::accel::testing::ChildProcess;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kToken[] = "s3cret-token";

std::unique_ptr<RendezvousServer> StartServer(int machines, absl::Duration timeout,
                                              int processes = 0,
                                              LivenessOptions liveness = LivenessOptions{}) {
  ServerOptions options;
  options.liveness = liveness;
  options.bind_address = "127.0.0.1:0";
  options.num_machines = machines;
  options.num_processes = processes;
  options.run_id = "run";
  options.token = kToken;
  options.rdzv_timeout = timeout;
  absl::StatusOr<std::unique_ptr<RendezvousServer>> server = RendezvousServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::unique_ptr<ChildProcess> StartAgent(const std::string& endpoint, int rank, int machines,
                                         std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {ACCEL_RDZV_AGENT,
                                   "--endpoint=" + endpoint,
                                   std::string("--token=") + kToken,
                                   "--run_id=run",
                                   absl::StrCat("--machine_rank=", rank),
                                   absl::StrCat("--num_machines=", machines)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto child = std::make_unique<ChildProcess>();
  EXPECT_TRUE(child->Start(argv));
  return child;
}

class RandomOrderTest : public ::testing::TestWithParam<int> {};

TEST_P(RandomOrderTest, AllMachinesJoinWithPrefixSumRanks) {
  const int n = GetParam();
  auto server = StartServer(n, absl::Seconds(60));
  ASSERT_NE(server, nullptr);
  std::mt19937 random(12345 + n);
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), random);
  std::vector<std::unique_ptr<ChildProcess>> agents(n);
  for (int rank : order) {
    const int delay = std::uniform_int_distribution<int>(0, 400)(random);
    agents[rank] = StartAgent(server->endpoint(), rank, n,
                              {absl::StrCat("--local_processes=", rank % 3 + 1),
                               absl::StrCat("--delay_ms=", delay), "--kv=1"});
  }
  int world = 0;
  std::vector<int> base;
  for (int rank = 0; rank < n; ++rank) {
    base.push_back(world);
    world += rank % 3 + 1;
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  for (int rank = 0; rank < n; ++rank) {
    const std::string line = agents[rank]->WaitForLine("JOINED", deadline);
    EXPECT_THAT(line, StartsWith(absl::StrCat("JOINED attempt=0 base=", base[rank],
                                              " world=", world, " master=127.0.0.1:")))
        << agents[rank]->output();
    EXPECT_THAT(line, HasSubstr(absl::StrCat("store=", server->endpoint(), " ns=run/0 machines=", n,
                                             " self=", rank, "@")));
    EXPECT_EQ(agents[rank]->WaitForLine("KV_OK", deadline), absl::StrCat("KV_OK peers=", n));
    EXPECT_EQ(agents[rank]->Wait(deadline), kExitOk) << agents[rank]->output();
  }
}

INSTANTIATE_TEST_SUITE_P(Machines, RandomOrderTest, ::testing::Values(2, 5, 8));

TEST(RendezvousMpTest, AgentsStartedBeforeTheServerRetryUntilItIsUp) {
  // Reserve a port, start the agents against it, then start the server on it.
  auto probe = StartServer(1, absl::Seconds(5));
  ASSERT_NE(probe, nullptr);
  const int port = probe->port();
  probe->Shutdown();
  probe.reset();
  const std::string endpoint = absl::StrCat("127.0.0.1:", port);
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int rank = 0; rank < 3; ++rank) agents.push_back(StartAgent(endpoint, rank, 3));
  absl::SleepFor(absl::Milliseconds(800));
  ServerOptions options;
  options.bind_address = endpoint;
  options.num_machines = 3;
  options.run_id = "run";
  options.token = kToken;
  auto server = RendezvousServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (auto& agent : agents) {
    EXPECT_THAT(agent->WaitForLine("JOINED", deadline), StartsWith("JOINED attempt=0"))
        << agent->output();
  }
}

TEST(RendezvousMpTest, DuplicateRankIsRefusedNamingBothMachines) {
  auto server = StartServer(3, absl::Seconds(3));
  ASSERT_NE(server, nullptr);
  auto first = StartAgent(server->endpoint(), 1, 3, {"--hostname=node-b"});
  ASSERT_TRUE(first->WaitForLine("never", absl::Now() + absl::Milliseconds(500)).empty());
  auto second = StartAgent(server->endpoint(), 1, 3, {"--hostname=node-c"});
  const std::string line = second->WaitForLine("JOIN_ERROR", absl::Now() + absl::Seconds(20));
  EXPECT_EQ(line,
            "JOIN_ERROR code=FAILED_PRECONDITION msg=join rendezvous at " + server->endpoint() +
                ": join rendezvous run_id=run: duplicate machine_rank 1: machine_rank 1 (host "
                "node-c, address 127.0.0.1) and machine_rank 1 (host node-b, address 127.0.0.1) "
                "both joined; give each machine its own machine_rank");
  EXPECT_EQ(second->Wait(absl::Now() + absl::Seconds(10)), kExitRendezvous);
}

TEST(RendezvousMpTest, MissingMachineTimeoutNamesItOnEveryWaitingMachine) {
  auto server = StartServer(4, absl::Seconds(2));
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int rank : {0, 1, 3}) {
    agents.push_back(
        StartAgent(server->endpoint(), rank, 4, {absl::StrCat("--address=10.9.0.", rank + 1)}));
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (auto& agent : agents) {
    const std::string line = agent->WaitForLine("JOIN_ERROR", deadline);
    EXPECT_THAT(line, StartsWith("JOIN_ERROR code=DEADLINE_EXCEEDED")) << agent->output();
    EXPECT_THAT(line, HasSubstr("timed out after 2s with 3 of 4 machines joined; arrived: "
                                "machine_rank 0 (host host0, address 10.9.0.1), machine_rank 1 "
                                "(host host1, address 10.9.0.2), machine_rank 3 (host host3, "
                                "address 10.9.0.4); missing machine_rank 2"));
  }
}

TEST(RendezvousMpTest, SigkilledAgentAbortsEveryOtherAgentWithinFiveSeconds) {
  auto server = StartServer(4, absl::Seconds(30));
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int rank = 0; rank < 4; ++rank) {
    agents.push_back(StartAgent(server->endpoint(), rank, 4, {"--watch_ms=30000"}));
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (auto& agent : agents) {
    ASSERT_THAT(agent->WaitForLine("JOINED", deadline), StartsWith("JOINED")) << agent->output();
  }
  absl::SleepFor(absl::Milliseconds(300));  // let every watch stream open
  const absl::Time killed_at = absl::Now();
  agents[2]->Signal(SIGKILL);
  for (int rank : {0, 1, 3}) {
    const std::string line = agents[rank]->WaitForLine("EVENT", killed_at + absl::Seconds(5));
    EXPECT_THAT(line,
                StartsWith("EVENT kind=abort machine=2 msg=machine 2 lost: its connection to the "
                           "rendezvous server closed (host host2"))
        << agents[rank]->output();
  }
  const absl::Duration noticed = absl::Now() - killed_at;
  // The closed connection is noticed at once (5-7 ms measured on the loaded 2-core VM); missed
  // heartbeats would take 2.7 s (the test below), so 1 s tells the two apart.
  EXPECT_LT(noticed, absl::Seconds(1));
  std::printf("abort reached all agents %s after SIGKILL\n", absl::FormatDuration(noticed).c_str());
}

// A stopped agent's kernel still answers probes: it is "stopped or stuck", lost after the silent
// limit (4 s here, 30 s by default), not after the 3 s that would also lose a busy one.
TEST(RendezvousMpTest, FrozenAgentIsLostAfterTheSilentLimit) {
  LivenessOptions liveness;
  liveness.silent_lost = absl::Seconds(4);
  auto server = StartServer(3, absl::Seconds(30), 0, liveness);
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int rank = 0; rank < 3; ++rank) {
    agents.push_back(StartAgent(server->endpoint(), rank, 3, {"--watch_ms=30000"}));
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (auto& agent : agents) {
    ASSERT_THAT(agent->WaitForLine("JOINED", deadline), StartsWith("JOINED")) << agent->output();
  }
  absl::SleepFor(absl::Milliseconds(300));
  const absl::Time stopped_at = absl::Now();
  agents[1]->Signal(SIGSTOP);  // its connection stays open; only heartbeats stop
  for (int rank : {0, 2}) {
    const std::string line = agents[rank]->WaitForLine("EVENT", stopped_at + absl::Seconds(6));
    EXPECT_THAT(line,
                StartsWith("EVENT kind=abort machine=1 msg=machine 1 lost: no heartbeat for "))
        << agents[rank]->output();
    EXPECT_THAT(line, HasSubstr("although its host answers (its launcher is stopped or stuck)"));
    EXPECT_THAT(line, HasSubstr("(host host1"));
  }
  const absl::Duration noticed = absl::Now() - stopped_at;
  EXPECT_GE(noticed, absl::Seconds(3.5));
  EXPECT_LT(noticed, absl::Seconds(6));
  std::printf("abort reached all agents %s after SIGSTOP\n", absl::FormatDuration(noticed).c_str());
  agents[1]->Signal(SIGKILL);
}

// An agent that gets no CPU time for longer than the heartbeat loss time (SIGSTOP for 4.5 s
// stands for a launcher whose cores are taken) is late, not lost: its host answers the probes.
TEST(RendezvousMpTest, AgentSilentForLongerThanTheLossTimeButAnsweringIsNotLost) {
  auto server = StartServer(3, absl::Seconds(30));
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int rank = 0; rank < 3; ++rank) {
    agents.push_back(StartAgent(server->endpoint(), rank, 3,
                                {rank == 1 ? "--watch_ms=8000" : "--watch_ms=20000"}));
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (auto& agent : agents) {
    ASSERT_THAT(agent->WaitForLine("JOINED", deadline), StartsWith("JOINED")) << agent->output();
  }
  absl::SleepFor(absl::Milliseconds(300));
  agents[1]->Signal(SIGSTOP);
  absl::SleepFor(absl::Milliseconds(4500));
  agents[1]->Signal(SIGCONT);
  // Machine 1 watches for 8 s and sees no abort; when it stops watching, its stream closes and
  // the others are told so: that, not a heartbeat loss, is the first and only event.
  EXPECT_EQ(agents[1]->WaitForLine("NO_EVENT", deadline), "NO_EVENT") << agents[1]->output();
  EXPECT_THAT(agents[1]->output(), ::testing::Not(HasSubstr("EVENT kind")));
  for (int rank : {0, 2}) {
    EXPECT_THAT(agents[rank]->WaitForLine("EVENT", deadline),
                StartsWith("EVENT kind=abort machine=1 msg=machine 1 lost: its connection to the "
                           "rendezvous server closed"))
        << agents[rank]->output();
  }
}

TEST(RendezvousMpTest, FailureReportIsTheRootCauseEverywhere) {
  auto server = StartServer(3, absl::Seconds(30));
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int rank = 0; rank < 3; ++rank) {
    agents.push_back(StartAgent(server->endpoint(), rank, 3,
                                {"--watch_ms=20000", rank == 1 ? "--report=failure" : ""}));
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (auto& agent : agents) {
    EXPECT_EQ(agent->WaitForLine("EVENT", deadline),
              "EVENT kind=abort machine=1 msg=rank 1 exited with 7")
        << agent->output();
  }
}

TEST(RendezvousMpTest, DoneReachesEveryAgent) {
  auto server = StartServer(3, absl::Seconds(30));
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int rank = 0; rank < 3; ++rank) {
    agents.push_back(
        StartAgent(server->endpoint(), rank, 3, {"--watch_ms=20000", "--report=done"}));
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (auto& agent : agents) {
    EXPECT_THAT(agent->WaitForLine("EVENT", deadline), StartsWith("EVENT kind=done"))
        << agent->output();
    EXPECT_EQ(agent->Wait(deadline), kExitOk);
  }
}

TEST(RendezvousMpTest, WrongTokenIsRefused) {
  auto server = StartServer(2, absl::Seconds(30));
  ASSERT_NE(server, nullptr);
  auto agent = StartAgent(server->endpoint(), 0, 2, {"--token=guess"});
  const std::string line = agent->WaitForLine("JOIN_ERROR", absl::Now() + absl::Seconds(20));
  // Over TCP the token's TLS refuses the handshake: said at once, nothing sent.
  EXPECT_THAT(line, StartsWith("JOIN_ERROR code=UNAUTHENTICATED"));
  EXPECT_THAT(line, HasSubstr("the rendezvous token is wrong"));
  EXPECT_THAT(line, HasSubstr("did not prove that it holds this job's token"));
  EXPECT_THAT(line, ::testing::Not(HasSubstr(kToken)));
}

}  // namespace
}  // namespace accel::rendezvous
