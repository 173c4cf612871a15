// Three machines in three network namespaces rendezvous through machine 0's address, exchange
// keys through its store and finish; a machine whose link goes down is noticed by the others.
//
// The test builds its own network: namespaces <tag>m0..m2 and a bridge namespace <tag>br, veth
// pairs from each machine to the bridge, 10.77.x.0/24 addresses inside them only. Nothing is
// added to the namespace the test runs in. TearDown deletes the namespaces (and so the links).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <random>

#include "absl/strings/str_cat.h"
#include "tests/testing/rdzv_process.h"
#include "tests/testing/skip.h"

namespace {

using ::accel::testing::ChildProcess;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int kMachines = 3;

std::string IpPath() {
  for (const char* path : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

// Runs a shell command with a 20 s bound; returns its exit status (0 = ok).
int Sh(const std::string& command) {
  return std::system(("timeout -s KILL 20 " + command + " >/dev/null 2>&1").c_str());
}

class NetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) ACCEL_SKIP_OR_FAIL("netns test needs root (ip netns add)");
    ip_ = IpPath();
    if (ip_.empty()) ACCEL_SKIP_OR_FAIL("netns test needs iproute2's ip");
    std::random_device random;
    const int tag = static_cast<int>(random() % 100000);
    prefix_ = absl::StrCat("ardz", ::getpid() % 100000, "x", tag);
    subnet_ = absl::StrCat("10.77.", tag % 250 + 1, ".");
    bridge_ns_ = prefix_ + "br";
    if (Sh(absl::StrCat(ip_, " netns add ", bridge_ns_)) != 0) {
      ACCEL_SKIP_OR_FAIL("netns test: `ip netns add` is not permitted here");
    }
    created_.push_back(bridge_ns_);
    ASSERT_EQ(Sh(absl::StrCat(ip_, " -n ", bridge_ns_, " link add br0 type bridge")), 0);
    ASSERT_EQ(Sh(absl::StrCat(ip_, " -n ", bridge_ns_, " link set br0 up")), 0);
    for (int m = 0; m < kMachines; ++m) {
      const std::string ns = Machine(m);
      ASSERT_EQ(Sh(absl::StrCat(ip_, " netns add ", ns)), 0);
      created_.push_back(ns);
      const std::string peer = absl::StrCat("vb", m);
      ASSERT_EQ(Sh(absl::StrCat(ip_, " -n ", ns, " link add eth0 type veth peer name ", peer,
                                " netns ", bridge_ns_)),
                0);
      ASSERT_EQ(Sh(absl::StrCat(ip_, " -n ", bridge_ns_, " link set ", peer, " master br0")), 0);
      ASSERT_EQ(Sh(absl::StrCat(ip_, " -n ", bridge_ns_, " link set ", peer, " up")), 0);
      ASSERT_EQ(Sh(absl::StrCat(ip_, " -n ", ns, " addr add ", Address(m), "/24 dev eth0")), 0);
      ASSERT_EQ(Sh(absl::StrCat(ip_, " -n ", ns, " link set eth0 up")), 0);
      ASSERT_EQ(Sh(absl::StrCat(ip_, " -n ", ns, " link set lo up")), 0);
    }
    if (Sh(absl::StrCat(ip_, " netns exec ", Machine(0), " true")) != 0) {
      ACCEL_SKIP_OR_FAIL("netns test: `ip netns exec` is not permitted here");
    }
  }

  void TearDown() override {
    agents_.clear();  // kills and reaps what is still running
    for (const std::string& ns : created_) Sh(absl::StrCat(ip_, " netns del ", ns));
  }

  std::string Machine(int m) const { return absl::StrCat(prefix_, "m", m); }
  std::string Address(int m) const { return absl::StrCat(subnet_, m + 1); }

  // Starts rdzv_agent as machine `m` inside its namespace.
  ChildProcess& StartAgent(int m, std::vector<std::string> flags) {
    std::vector<std::string> argv = {ip_,
                                     "netns",
                                     "exec",
                                     Machine(m),
                                     ACCEL_RDZV_AGENT,
                                     "--token=netns-token",
                                     "--run_id=netns",
                                     absl::StrCat("--machine_rank=", m),
                                     absl::StrCat("--num_machines=", kMachines),
                                     "--num_processes=6",
                                     "--local_processes=2",
                                     absl::StrCat("--hostname=node", m),
                                     "--address=" + Address(m)};
    argv.insert(argv.end(), flags.begin(), flags.end());
    agents_.push_back(std::make_unique<ChildProcess>());
    EXPECT_TRUE(agents_.back()->Start(argv));
    return *agents_.back();
  }

  // Starts machine 0 (server + agent) and returns the endpoint the others connect to.
  std::string StartMachineZero(std::vector<std::string> flags) {
    flags.push_back("--serve=0.0.0.0:0");
    ChildProcess& zero = StartAgent(0, flags);
    const std::string line = zero.WaitForLine("SERVING", absl::Now() + absl::Seconds(20));
    EXPECT_THAT(line, StartsWith("SERVING port=")) << zero.output();
    return Address(0) + ":" + line.substr(line.find('=') + 1);
  }

  std::string ip_;
  std::string prefix_;
  std::string subnet_;
  std::string bridge_ns_;
  std::vector<std::string> created_;
  std::vector<std::unique_ptr<ChildProcess>> agents_;
};

TEST_F(NetnsTest, ThreeMachinesRendezvousThroughMachineZeroAddress) {
  const std::string endpoint = StartMachineZero({"--kv=1", "--watch_ms=30000", "--report=done"});
  for (int m = 1; m < kMachines; ++m) {
    StartAgent(m, {"--endpoint=" + endpoint, "--kv=1", "--watch_ms=30000", "--report=done",
                   absl::StrCat("--delay_ms=", 200 * m)});
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  for (int m = 0; m < kMachines; ++m) {
    ChildProcess& agent = *agents_[m];
    const std::string joined = agent.WaitForLine("JOINED", deadline);
    EXPECT_THAT(joined, StartsWith(absl::StrCat("JOINED attempt=0 base=", 2 * m,
                                                " world=6 master=", Address(0), ":")))
        << agent.output();
    EXPECT_THAT(joined, HasSubstr(" store=" + endpoint + " ns=netns/0 machines=3"));
    EXPECT_EQ(agent.WaitForLine("KV_OK", deadline), "KV_OK peers=3") << agent.output();
    EXPECT_THAT(agent.WaitForLine("EVENT", deadline), StartsWith("EVENT kind=done"))
        << agent.output();
  }
}

TEST_F(NetnsTest, MachineWhoseLinkGoesDownIsLostEverywhereWithinFiveSeconds) {
  const std::string endpoint = StartMachineZero({"--watch_ms=30000"});
  for (int m = 1; m < kMachines; ++m) {
    StartAgent(m, {"--endpoint=" + endpoint, "--watch_ms=30000"});
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  for (auto& agent : agents_) {
    ASSERT_THAT(agent->WaitForLine("JOINED", deadline), StartsWith("JOINED")) << agent->output();
  }
  absl::SleepFor(absl::Milliseconds(300));
  const absl::Time down_at = absl::Now();
  ASSERT_EQ(Sh(absl::StrCat(ip_, " -n ", Machine(2), " link set eth0 down")), 0);
  for (int m : {0, 1}) {
    const std::string line = agents_[m]->WaitForLine("EVENT", down_at + absl::Seconds(5));
    EXPECT_THAT(line,
                StartsWith("EVENT kind=abort machine=2 msg=machine 2 lost: no heartbeat for "));
    EXPECT_THAT(line, HasSubstr("and its host does not answer"));  // probed, unanswered
    EXPECT_THAT(line, HasSubstr("(host node2, address " + Address(2) + ")"))
        << agents_[m]->output();
  }
  EXPECT_LT(absl::Now() - down_at, absl::Seconds(5));
  // Machine 2 judges the server alike: no answer to heartbeats, its host unanswering.
  const std::string lost = agents_[2]->WaitForLine("EVENT", down_at + absl::Seconds(5));
  EXPECT_THAT(lost,
              StartsWith("EVENT kind=server_lost machine=-1 msg=no answer to heartbeats for "));
  EXPECT_THAT(lost, HasSubstr("and its host does not answer"));
}

// A machine that gets no CPU time for 4.5 s (SIGSTOP stands for cores taken by its workers) is
// probed across the bridge, its kernel answers, and it is not lost; its stream closing when it
// stops watching is then the first event.
TEST_F(NetnsTest, MachineSilentButAnsweringAcrossTheBridgeIsNotLost) {
  const std::string endpoint = StartMachineZero({"--watch_ms=30000"});
  StartAgent(1, {"--endpoint=" + endpoint, "--watch_ms=30000"});
  StartAgent(2, {"--endpoint=" + endpoint, "--watch_ms=8000"});
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  for (auto& agent : agents_) {
    ASSERT_THAT(agent->WaitForLine("JOINED", deadline), StartsWith("JOINED")) << agent->output();
  }
  absl::SleepFor(absl::Milliseconds(300));
  agents_[2]->Signal(SIGSTOP);
  absl::SleepFor(absl::Milliseconds(4500));
  agents_[2]->Signal(SIGCONT);
  EXPECT_EQ(agents_[2]->WaitForLine("NO_EVENT", deadline), "NO_EVENT") << agents_[2]->output();
  for (int m : {0, 1}) {
    EXPECT_THAT(agents_[m]->WaitForLine("EVENT", deadline),
                StartsWith("EVENT kind=abort machine=2 msg=machine 2 lost: its connection to the "
                           "rendezvous server closed"))
        << agents_[m]->output();
  }
}

}  // namespace
