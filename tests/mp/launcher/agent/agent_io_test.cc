// Multi-process tests of the accel-launch binary on one machine (127.0.0.1): what workers read and
// write (stdin, log files, lines, descriptors), command-line errors, the rendezvous's own errors,
// and an unmodified torch.distributed script. Fixture and time bounds: launch_test_fixture.h,
// agent_test.cc.
#include "tests/mp/launcher/agent/launch_test_fixture.h"

namespace accel::testing {
namespace {

using ::testing::AnyOf;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(LaunchTest, WorkersReadEndOfFileFromStdin) {
  RunResult r = Launch({"--num_processes", "2"}, {"/bin/sh", "-c", "read line; echo read=$?"});
  ASSERT_EQ(r.exit_code, kExitOk) << r.err;
  // The same line from both: once (dedup_output), or once each when they were further apart
  // than dedup_window on a busy machine.
  EXPECT_THAT(r.out, AnyOf(Eq("[ranks 0-1] read=1\n"), Eq("[rank 0] read=1\n[rank 1] read=1\n"),
                           Eq("[rank 1] read=1\n[rank 0] read=1\n")));
}

TEST_F(LaunchTest, LogDirTeeAndRanksFilter) {
  RunResult quiet = Launch({"--num_processes", "2", "--log_dir", dir_, "--run_id", "logs"},
                           {kFake, "--lines=2:10", "--stderr=warn"});
  ASSERT_EQ(quiet.exit_code, kExitOk) << quiet.err;
  EXPECT_THAT(quiet.out, Not(HasSubstr("[rank")));  // files only
  EXPECT_EQ(ReadFile(dir_ + "/logs/attempt_0/rank_1/stdout.log"),
            "rank 1 line 0 \nrank 1 line 1 \n");
  EXPECT_EQ(ReadFile(dir_ + "/logs/attempt_0/rank_0/stderr.log"), "warn\n");

  RunResult tee = Launch({"--num_processes", "2", "--log_dir", dir_, "--run_id", "tee", "--tee",
                          "--ranks_filter", "1"},
                         {kFake, "--lines=2:10"});
  ASSERT_EQ(tee.exit_code, kExitOk) << tee.err;
  EXPECT_EQ(tee.out, "[rank 1] rank 1 line 0 \n[rank 1] rank 1 line 1 \n");
  EXPECT_EQ(ReadFile(dir_ + "/tee/attempt_0/rank_0/stdout.log"),
            "rank 0 line 0 \nrank 0 line 1 \n");
}

TEST_F(LaunchTest, LinesFromManyRanksNeverInterleave) {
  RunResult r = Launch({"--num_processes", "4"}, {kFake, "--lines=2000:300"});
  ASSERT_EQ(r.exit_code, kExitOk) << r.err;
  const std::regex line(R"(\[rank (\d)\] rank (\d) line \d+ x+)");
  int count = 0;
  for (absl::string_view l : absl::StrSplit(r.out, '\n', absl::SkipEmpty())) {
    std::cmatch m;
    ASSERT_TRUE(std::regex_match(l.begin(), l.end(), m, line)) << l.substr(0, 120);
    ASSERT_EQ(m[1].str(), m[2].str());
    ASSERT_EQ(l.size(), 9u + 300u);
    ++count;
  }
  EXPECT_EQ(count, 4 * 2000);
}

TEST_F(LaunchTest, WorkersInheritNoDescriptorOfTheLauncher) {
  // Workers get 0, 1, 2 and whatever this test itself inherited without FD_CLOEXEC (the
  // launcher passes those on untouched); nothing the launcher opened (gRPC, pipes, signalfd).
  std::set<int> expected = {0, 1, 2};
  DIR* dir = ::opendir("/proc/self/fd");
  for (dirent* e = ::readdir(dir); e != nullptr; e = ::readdir(dir)) {
    const int fd = std::atoi(e->d_name);
    if (e->d_name[0] == '.' || fd == ::dirfd(dir)) continue;
    if ((::fcntl(fd, F_GETFD) & FD_CLOEXEC) == 0) expected.insert(fd);
  }
  ::closedir(dir);
  std::string want = "FDS";
  for (int fd : expected) want += " " + std::to_string(fd);
  RunResult r = Launch({"--num_processes", "2"}, {kFake, "--list_fds"});
  ASSERT_EQ(r.exit_code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("[ranks 0-1] " + want + "\n"));
}

TEST_F(LaunchTest, MissingProgramIsAClearErrorBeforeAnythingStarts) {
  RunResult r = Launch({"--num_processes", "2"}, {dir_ + "/no_such_train.bin"});
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("resolve program " + dir_ + "/no_such_train.bin: No such file"));
  RunResult path = Launch({"--num_processes", "2"}, {"no_such_program_on_path"});
  EXPECT_EQ(path.exit_code, kExitUsage);
  EXPECT_THAT(path.err, HasSubstr("no_such_program_on_path"));
}

TEST_F(LaunchTest, RendezvousTimeoutIsARendezvousFailureAndNamesTheMissingMachine) {
  // Machine 0 of a two-machine job whose machine 1 never comes.
  auto port = PickFreePort("127.0.0.1");
  ASSERT_TRUE(port.ok()) << port.status();
  const std::string endpoint = "127.0.0.1:" + std::to_string(*port);
  RunResult r = RunCommand(
      {kLauncher, "--use_cpu", "--num_machines=2", "--num_processes=2", "--machine_rank=0",
       "--main_process_ip=127.0.0.1", "--main_process_port=" + std::to_string(*port),
       "--rdzv_timeout=1", kFake, "--pid_dir=" + dir_},
      {"ACCEL_RDZV_TOKEN=29c153869eac0472aa7ba937cb1330f4a354471e6c9744863a0cbf0207588133"},
      absl::Seconds(30));
  EXPECT_EQ(r.exit_code, kExitRendezvous) << r.err;
  EXPECT_THAT(r.err, HasSubstr("join rendezvous at " + endpoint));
  EXPECT_THAT(r.err, HasSubstr("missing machine_rank 1"));
  EXPECT_LT(r.elapsed, absl::Seconds(4));               // 1.13-1.22 s measured
  EXPECT_TRUE(ReadFile(dir_ + "/rank_0.pid").empty());  // no worker started
}

// main_process_ip is not this machine's (NAT, a cloud's public address): the server listens on
// every interface and says so, naming the wildcard rather than a loopback address.
TEST_F(LaunchTest, AServerThatCannotBindMainProcessIpSaysItListensEverywhere) {
  auto port = PickFreePort("");
  ASSERT_TRUE(port.ok()) << port.status();
  RunResult r = RunCommand(
      {kLauncher, "--use_cpu", "--num_machines=2", "--num_processes=2", "--machine_rank=0",
       "--main_process_ip=192.0.2.1", "--main_process_port=" + std::to_string(*port),
       "--rdzv_timeout=1", kFake},
      {"ACCEL_RDZV_TOKEN=29c153869eac0472aa7ba937cb1330f4a354471e6c9744863a0cbf0207588133"},
      absl::Seconds(30));
  EXPECT_EQ(r.exit_code, kExitRendezvous) << r.err;
  EXPECT_THAT(r.err, HasSubstr("rendezvous server: listening on 0.0.0.0:" + std::to_string(*port) +
                               ", every interface of this machine, because main_process_ip "
                               "192.0.2.1 (192.0.2.1) is not an address of this machine"));
}

TEST_F(LaunchTest, DryRunPrintsThePlanAndStartsNothing) {
  RunResult r = Launch({"--num_processes", "2", "--dry_run", "--gradient_accumulation_steps", "2"},
                       {kFake, "--pid_dir=" + dir_});
  EXPECT_EQ(r.exit_code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("processes/machine:   2 (world size 2)"));
  EXPECT_THAT(r.out, HasSubstr("accumulation steps:  2"));
  // The plan says where the store will be and how it is secured: a one-machine job's is a Unix
  // socket in a private directory made when the job starts (not yet: a dry run makes nothing).
  EXPECT_THAT(r.out, HasSubstr("rendezvous:          unix:<a private directory>/rdzv.sock"));
  EXPECT_THAT(r.out, HasSubstr("transport:           Unix socket in a private directory (nothing "
                               "on the network)"));
  EXPECT_TRUE(ReadFile(dir_ + "/rank_0.pid").empty());
}

TEST_F(LaunchTest, UnmodifiedTorchDistributedScriptRuns) {
  if (!TorchPythonMissing().empty()) ACCEL_SKIP_OR_FAIL(TorchPythonMissing());
  RunResult r =
      Launch({"--num_processes", "2"},
             {"/usr/bin/python3", std::string(ACCEL_SOURCE_DIR) + "/tests/testing/torch_gloo.py"},
             absl::Seconds(120));
  EXPECT_EQ(r.exit_code, kExitOk) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("[rank 0] torch_gloo rank 0/2 local 0 all_reduce 3 expected 3"));
  EXPECT_THAT(r.out, HasSubstr("[rank 1] torch_gloo rank 1/2 local 1 all_reduce 3 expected 3"));
}

// Uneven inputs: the ranks wait on each other forever. The hang is found from /proc (no CPU time,
// no output); the launcher's Python progress module shows every rank inside the same collective
// (each has issued 4), which the counts cannot split, so the rank that went idle first is named,
// as inferred.
TEST_F(LaunchTest, TorchScriptWhoseRanksWaitOnEachOtherEndsWithAnInferredRootCause) {
  if (!TorchPythonMissing().empty()) ACCEL_SKIP_OR_FAIL(TorchPythonMissing());
  RunResult r =
      Launch({"--num_processes", "2", "--hang_timeout", "3"},
             {"/usr/bin/python3", std::string(ACCEL_SOURCE_DIR) + "/tests/testing/torch_uneven.py"},
             absl::Seconds(120));
  EXPECT_EQ(r.exit_code, kExitWorkerFailed) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("[rank 1] torch_uneven rank 1 finished its 3 batches"));
  EXPECT_THAT(r.err, HasSubstr("hang (inferred): rank 1 (machine 0) went idle first"));
  EXPECT_THAT(r.err, HasSubstr("every rank waits in collective 4, so this is inferred"));
  EXPECT_THAT(r.err, HasSubstr("rank 0 (machine 0): waiting in collective 4 (step 0)"));
  // Detection: every rank idle for the hang timeout, not much longer (2x, STYLE.md rule 11).
  std::smatch idle;
  ASSERT_TRUE(std::regex_search(r.err, idle,
                                std::regex(R"(no rank used CPU or wrote output for ([0-9.]+) s)")))
      << r.err;
  EXPECT_GE(std::stod(idle[1]), 3.0) << r.err;
  EXPECT_LT(std::stod(idle[1]), 6.0) << r.err;
  // The whole run, torch's import included: 17-28 s measured on the shared 2-core VM.
  EXPECT_LT(r.elapsed, absl::Seconds(80));  // not gloo's 30 minutes
}

}  // namespace
}  // namespace accel::testing
