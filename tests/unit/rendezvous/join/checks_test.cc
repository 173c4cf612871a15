// Join-time checks and rank assignment, each with its exact message.
#include "rendezvous/join/checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

JoinedMachine Machine(int rank, const std::string& host, const std::string& address) {
  JoinedMachine m;
  m.request.set_run_id("r1");
  m.request.set_machine_rank(rank);
  m.request.set_num_machines(2);
  m.request.set_num_processes(4);
  m.request.set_local_processes(2);
  m.request.set_hostname(host);
  m.request.set_accel_version("0.1.0");
  (*m.request.mutable_config_fingerprint())["mixed_precision"] = "h1";
  (*m.request.mutable_config_fingerprint())["gradient_accumulation_steps"] = "h2";
  (*m.request.mutable_versions())["libtorch"] = "2.1.0";
  m.address = address;
  return m;
}

ServerOptions Options() {
  ServerOptions o;
  o.run_id = "r1";
  o.num_machines = 2;
  o.num_processes = 4;
  return o;
}

TEST(AssignBaseRanksTest, PrefixSumsInMachineRankOrder) {
  EXPECT_EQ(AssignBaseRanks({2, 2, 2}), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(AssignBaseRanks({1, 4, 2, 8}), (std::vector<int>{0, 1, 5, 7}));
  EXPECT_EQ(AssignBaseRanks({3}), (std::vector<int>{0}));
  EXPECT_TRUE(AssignBaseRanks({}).empty());
}

TEST(PeerHostTest, ParsesGrpcPeerStrings) {
  EXPECT_EQ(PeerHost("ipv4:10.0.0.2:51234"), "10.0.0.2");
  EXPECT_EQ(PeerHost("ipv6:[::1]:51234"), "::1");
  EXPECT_EQ(PeerHost("ipv6:%5B::1%5D:51234"), "::1");
  EXPECT_EQ(PeerHost("unix:/tmp/x"), "unix:/tmp/x");
}

TEST(JoinChecksTest, DuplicateRankNamesBothMachines) {
  absl::Status status =
      DuplicateRankError(Machine(1, "b", "10.0.0.2"), Machine(1, "c", "10.0.0.3"), "r1");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "join rendezvous run_id=r1: duplicate machine_rank 1: machine_rank 1 (host b, "
            "address 10.0.0.2) and machine_rank 1 (host c, address 10.0.0.3) both joined; give "
            "each machine its own machine_rank");
}

TEST(JoinChecksTest, NumMachinesMismatch) {
  JoinedMachine m = Machine(1, "b", "10.0.0.2");
  m.request.set_num_machines(3);
  absl::Status status =
      CheckAgainstServer(m, Options(), "machine_rank 0 (host a, address 10.0.0.1)");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "join rendezvous run_id=r1: num_machines mismatch: machine_rank 1 (host b, address "
            "10.0.0.2) has num_machines=3 but machine_rank 0 (host a, address 10.0.0.1) has "
            "num_machines=2");
}

TEST(JoinChecksTest, NumProcessesMismatch) {
  JoinedMachine m = Machine(1, "b", "10.0.0.2");
  m.request.set_num_processes(8);
  absl::Status status =
      CheckAgainstServer(m, Options(), "machine_rank 0 (host a, address 10.0.0.1)");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "join rendezvous run_id=r1: num_processes mismatch: machine_rank 1 (host b, address "
            "10.0.0.2) has num_processes=8 but machine_rank 0 (host a, address 10.0.0.1) has "
            "num_processes=4");
}

TEST(JoinChecksTest, ACountMismatchIsNamedEvenWhenTheRunIdDiffersToo) {
  // The default run id of a multi-machine job is derived from num_processes: both differ, and
  // the count is the reason.
  JoinedMachine m = Machine(1, "b", "10.0.0.2");
  m.request.set_num_processes(8);
  m.request.set_run_id("job-10.0.0.1-29500-8");
  absl::Status status = CheckAgainstServer(m, Options(), "machine_rank 0");
  EXPECT_THAT(status.message(), HasSubstr("num_processes mismatch"));
  EXPECT_THAT(status.message(), Not(HasSubstr("run id")));
}

TEST(JoinChecksTest, WrongRunId) {
  JoinedMachine m = Machine(1, "b", "10.0.0.2");
  m.request.set_run_id("other");
  absl::Status status = CheckAgainstServer(m, Options(), "the rendezvous server");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "join rendezvous run_id=r1: run id mismatch: machine_rank 1 (host b, address "
            "10.0.0.2) has run_id \"other\" but the rendezvous server has run_id \"r1\"");
}

TEST(JoinChecksTest, MatchingMachinePasses) {
  EXPECT_TRUE(CheckAgainstServer(Machine(1, "b", "x"), Options(), "server").ok());
  std::vector<std::string> warnings;
  EXPECT_TRUE(
      CheckAgainstPeer(Machine(1, "b", "x"), Machine(0, "a", "y"), "r1", true, warnings).ok());
  EXPECT_TRUE(warnings.empty());
}

TEST(JoinChecksTest, FingerprintMismatchListsTheDifferingKeys) {
  JoinedMachine m = Machine(1, "b", "10.0.0.2");
  (*m.request.mutable_config_fingerprint())["mixed_precision"] = "other";
  (*m.request.mutable_config_fingerprint())["use_cpu"] = "h3";  // only on this machine
  std::vector<std::string> warnings;
  absl::Status status = CheckAgainstPeer(m, Machine(0, "a", "10.0.0.1"), "r1", false, warnings);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "join rendezvous run_id=r1: config fingerprint mismatch: machine_rank 1 (host b, "
            "address 10.0.0.2) and machine_rank 0 (host a, address 10.0.0.1) differ in "
            "mixed_precision, use_cpu");
}

TEST(JoinChecksTest, VersionMismatchWarnsUnlessStrict) {
  JoinedMachine m = Machine(1, "b", "10.0.0.2");
  m.request.set_accel_version("0.2.0");
  (*m.request.mutable_versions())["libtorch"] = "2.2.0";
  std::vector<std::string> warnings;
  ASSERT_TRUE(CheckAgainstPeer(m, Machine(0, "a", "10.0.0.1"), "r1", false, warnings).ok());
  const std::string expected =
      "version mismatch: machine_rank 1 (host b, address 10.0.0.2) and machine_rank 0 (host a, "
      "address 10.0.0.1) differ in accel-launch 0.2.0 vs 0.1.0, libtorch 2.2.0 vs 2.1.0";
  EXPECT_EQ(warnings, std::vector<std::string>{expected});
  warnings.clear();
  absl::Status strict = CheckAgainstPeer(m, Machine(0, "a", "10.0.0.1"), "r1", true, warnings);
  EXPECT_EQ(strict.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(strict.message(), "join rendezvous run_id=r1: " + expected);
  EXPECT_TRUE(warnings.empty());
}

TEST(JoinChecksTest, RequestShape) {
  JoinedMachine m = Machine(2, "c", "x");
  EXPECT_EQ(CheckRequestShape(m.request, Options()).message(),
            "join rendezvous run_id=r1: machine_rank 2 is outside [0, 2)");
  m = Machine(1, "c", "x");
  m.request.set_local_processes(0);
  EXPECT_EQ(CheckRequestShape(m.request, Options()).message(),
            "join rendezvous run_id=r1: machine_rank 1 has local_processes=0; need >= 1");
  m = Machine(1, std::string(300, 'h'), "x");
  EXPECT_EQ(CheckRequestShape(m.request, Options()).code(), absl::StatusCode::kInvalidArgument);
}

TEST(JoinChecksTest, TimeoutNamesArrivedAndMissing) {
  JoinedMachine a = Machine(0, "a", "10.0.0.1");
  JoinedMachine c = Machine(2, "c", "10.0.0.3");
  absl::Status status = TimeoutError("r1", 0, absl::Seconds(30), 4, {&a, &c});
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(status.message(),
            "join rendezvous run_id=r1 attempt=0: timed out after 30s with 2 of 4 machines "
            "joined; arrived: machine_rank 0 (host a, address 10.0.0.1), machine_rank 2 (host c, "
            "address 10.0.0.3); missing machine_rank 1, 3");
}

}  // namespace
}  // namespace accel::rendezvous
