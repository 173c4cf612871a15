// Multi-process tests of the supervisor with real workers (fake_worker): exit codes, signals,
// the SIGTERM → grace → SIGKILL teardown, signal forwarding, aborts, hangs, fd hygiene and reaping.
// Time bounds: about 3x the slowest of three runs on the shared 2-core VM while others built
// (2026-12-02), at least 2 s; each names what was measured.
#include "launcher/process/supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "common/defaults.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/process/os_util.h"
#include "tests/mp/launcher/process/supervisor_fixture.h"
#include "tests/testing/pipes.h"

namespace accel::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using accel::testing::Drain;

// The descriptors of this process that a child would inherit (no FD_CLOEXEC).
std::set<int> InheritableFds() {
  std::set<int> out;
  DIR* dir = ::opendir("/proc/self/fd");
  const int own = ::dirfd(dir);
  for (dirent* e = ::readdir(dir); e != nullptr; e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const int fd = std::atoi(e->d_name);
    if (fd == own) continue;
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) == 0) out.insert(fd);
  }
  ::closedir(dir);
  return out;
}

// The children of this process (the workers), from /proc/*/stat.
std::vector<pid_t> ChildPids() {
  std::vector<pid_t> out;
  DIR* dir = ::opendir("/proc");
  for (dirent* e = ::readdir(dir); e != nullptr; e = ::readdir(dir)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    std::getline(stat, line);
    const std::size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == ::getpid()) {
      out.push_back(pid);
    }
  }
  ::closedir(dir);
  return out;
}

// Returns the pid written to `path`, 0 while it is not there.
pid_t ReadPid(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[32] = {};
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  return n > 0 ? std::atoi(buf) : 0;
}

class SupervisorTest : public SupervisorFixture {
 protected:
  AttemptResult Run(std::vector<WorkerLaunch> workers, SupervisorOptions options = {},
                    std::vector<WorkerFailure>* reported = nullptr,
                    std::vector<int>* interrupts = nullptr) {
    OutputOptions output;
    output.console_stdout = out_write_.get();
    output.console_stderr = err_write_.get();
    OutputRouter router(output);
    options.host = "testhost";
    Supervisor supervisor(options, *signals_, *abort_);
    const absl::Time start = absl::Now();
    AttemptResult result = supervisor.Run(
        std::move(workers), router,
        [&](const WorkerFailure& f) {
          if (reported != nullptr) reported->push_back(f);
        },
        [&](int signal, const std::string& sender) {
          if (interrupts != nullptr) interrupts->push_back(signal);
          senders_.push_back(sender);
        });
    elapsed_ = absl::Now() - start;
    return result;
  }

  std::vector<std::string> senders_;  // on_interrupt's sender, each call
};

TEST_F(SupervisorTest, AllWorkersSucceed) {
  AttemptResult result = Run(Workers(2, {"--lines=3:20"}));
  EXPECT_EQ(result.end, AttemptEnd::kSucceeded);
  EXPECT_TRUE(result.failures.empty());
  const std::string out = Drain(out_read_.get());
  EXPECT_THAT(out, HasSubstr("[rank 0] rank 0 line 2 xxxxxx\n"));
  EXPECT_THAT(out, HasSubstr("[rank 1] rank 1 line 0 xxxxxx\n"));
}

TEST_F(SupervisorTest, ExitCodeIsTheRootCauseAndPeersAreStopped) {
  std::vector<WorkerFailure> reported;
  AttemptResult result =
      Run(Workers(3, {"--fail_rank=1", "--fail_sleep=0.2", "--sleep=30", "--exit=7",
                      "--write_error=loss is NaN", "--stderr=Traceback: boom"}),
          {}, &reported);
  EXPECT_EQ(result.end, AttemptEnd::kWorkerFailed);
  ASSERT_EQ(result.failures.size(), 1u);  // peers stopped by us are not failures
  const WorkerFailure& root = result.failures[0];
  EXPECT_EQ(root.rank, 1);
  EXPECT_EQ(root.exit.exit_code, 7);
  EXPECT_EQ(root.host, "testhost");
  EXPECT_GT(root.pid, 0);
  EXPECT_EQ(root.error_message, "loss is NaN");
  EXPECT_THAT(root.stderr_tail, ElementsAre("Traceback: boom"));
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_EQ(reported[0].rank, 1);
  EXPECT_EQ(reported[0].error_message, "loss is NaN");
  EXPECT_LT(elapsed_, absl::Seconds(2));  // the peers died of SIGTERM at once (0.21 s)
  EXPECT_EQ(::kill(root.pid, 0), -1);     // reaped
}

TEST_F(SupervisorTest, WorkerKilledBySignal) {
  AttemptResult result =
      Run(Workers(2, {"--fail_rank=0", "--fail_sleep=0", "--signal=9", "--sleep=30"}));
  EXPECT_EQ(result.end, AttemptEnd::kWorkerFailed);
  ASSERT_EQ(result.failures.size(), 1u);
  EXPECT_EQ(result.failures[0].rank, 0);
  EXPECT_EQ(result.failures[0].exit.signal, 9);
  EXPECT_EQ(DescribeExit(result.failures[0].exit), "signal 9 (SIGKILL)");
}

TEST_F(SupervisorTest, SigtermIgnoringWorkerIsKilledAfterTheGrace) {
  std::vector<WorkerLaunch> workers =
      Workers(2, {"--fail_rank=0", "--fail_sleep=0.5", "--exit=3", "--sleep=60"});
  workers[1].spec.argv.push_back("--ignore_term");
  SupervisorOptions options;
  options.shutdown_grace = absl::Seconds(1);
  AttemptResult result = Run(std::move(workers), options);
  EXPECT_EQ(result.end, AttemptEnd::kWorkerFailed);
  ASSERT_EQ(result.failures.size(), 1u);
  EXPECT_EQ(result.failures[0].exit.exit_code, 3);
  EXPECT_GE(elapsed_, absl::Seconds(1.5));
  EXPECT_LT(elapsed_, absl::Seconds(4.5));
}

TEST_F(SupervisorTest, LauncherSignalIsForwardedAndEndsTheAttempt) {
  std::thread sender([] {
    absl::SleepFor(absl::Milliseconds(300));
    ::kill(::getpid(), SIGINT);
  });
  AttemptResult result = Run(Workers(2, {"--sleep=30"}));
  sender.join();
  EXPECT_EQ(result.end, AttemptEnd::kInterrupted);
  EXPECT_EQ(result.signal, SIGINT);
  EXPECT_LT(elapsed_, absl::Seconds(2));  // 0.31 s measured
}

TEST_F(SupervisorTest, SecondSignalKillsWithoutWaitingForTheGrace) {
  std::thread sender([] {
    absl::SleepFor(absl::Milliseconds(300));
    ::kill(::getpid(), SIGTERM);
    absl::SleepFor(absl::Milliseconds(300));
    ::kill(::getpid(), SIGINT);
  });
  SupervisorOptions options;
  options.shutdown_grace = absl::Seconds(30);
  std::vector<int> interrupts;
  AttemptResult result =
      Run(Workers(2, {"--ignore_term", "--sleep=60"}), options, nullptr, &interrupts);
  sender.join();
  EXPECT_EQ(result.end, AttemptEnd::kInterrupted);
  EXPECT_EQ(result.signal, SIGTERM);
  EXPECT_EQ(interrupts, std::vector<int>{SIGTERM});  // once, before the teardown
  EXPECT_LT(elapsed_, absl::Seconds(2));             // 0.60 s measured
}

TEST_F(SupervisorTest, WorkersKilledFromOutsideThenTheLauncherIsAnInterruption) {
  // As Slurm's scancel does: SIGTERM to every worker and, a moment later, to the launcher.
  std::thread slurm([] {
    absl::SleepFor(absl::Milliseconds(500));
    for (pid_t pid : ChildPids()) ::kill(pid, SIGTERM);
    absl::SleepFor(absl::Milliseconds(200));
    ::kill(::getpid(), SIGTERM);
  });
  AttemptResult result = Run(Workers(2, {"--sleep=30"}));
  slurm.join();
  EXPECT_EQ(result.end, AttemptEnd::kInterrupted);
  EXPECT_TRUE(result.failures.empty());
  EXPECT_EQ(result.signal, SIGTERM);
  EXPECT_EQ(result.signal_sender, ProcessName(::getpid()));
  EXPECT_THAT(senders_, ElementsAre(ProcessName(::getpid())));
}

TEST_F(SupervisorTest, AWorkerTerminatedFromOutsideAloneIsAFailureAfterTheGrace) {
  std::thread killer([] {
    absl::SleepFor(absl::Milliseconds(300));
    ::kill(ChildPids().front(), SIGTERM);
  });
  AttemptResult result = Run(Workers(2, {"--sleep=30"}));
  killer.join();
  EXPECT_EQ(result.end, AttemptEnd::kWorkerFailed);
  ASSERT_EQ(result.failures.size(), 1u);
  EXPECT_EQ(result.failures[0].exit.signal, SIGTERM);
  EXPECT_GE(elapsed_, absl::Milliseconds(300) + absl::FromChrono(defaults::kOwnSignalGrace));
  EXPECT_LT(elapsed_, absl::Seconds(4));  // 1.33 s measured
}

// SIGKILL is no scheduler's first signal (Slurm sends SIGTERM first, to the launcher too): a
// worker killed by it (kill -9, the OOM killer) is a failure at once, before its peers fail on
// it and are taken for the root cause.
TEST_F(SupervisorTest, AWorkerKilledWithSigkillIsAFailureAtOnce) {
  std::thread killer([] {
    absl::SleepFor(absl::Milliseconds(300));
    ::kill(ChildPids().front(), SIGKILL);
  });
  AttemptResult result = Run(Workers(2, {"--sleep=30"}));
  killer.join();
  EXPECT_EQ(result.end, AttemptEnd::kWorkerFailed);
  ASSERT_EQ(result.failures.size(), 1u);
  EXPECT_EQ(result.failures[0].exit.signal, SIGKILL);
  EXPECT_LT(elapsed_, absl::Milliseconds(300) + absl::FromChrono(defaults::kOwnSignalGrace));
}

TEST_F(SupervisorTest, TheFirstSignalDuringAnAbortSaysWhyThisMachineStopped) {
  std::thread sender([this] {
    absl::SleepFor(absl::Milliseconds(300));
    abort_->Abort("machine 0: launcher stopped by SIGTERM from Slurm");
    absl::SleepFor(absl::Milliseconds(100));
    ::kill(::getpid(), SIGTERM);
  });
  SupervisorOptions options;
  options.shutdown_grace = absl::Seconds(1);
  AttemptResult result = Run(Workers(2, {"--ignore_term", "--sleep=30"}), options);
  sender.join();
  EXPECT_EQ(result.end, AttemptEnd::kInterrupted);
  EXPECT_EQ(result.signal, SIGTERM);
  // Not a second signal: the grace still runs its course before SIGKILL.
  EXPECT_GE(elapsed_, absl::Seconds(1.2));
  EXPECT_LT(elapsed_, absl::Seconds(4));  // 1.32 s measured
}

TEST_F(SupervisorTest, AbortFromAnotherThreadStopsTheWorkers) {
  std::thread aborter([this] {
    absl::SleepFor(absl::Milliseconds(300));
    abort_->Abort("machine 1 rank 3 failed");
  });
  AttemptResult result = Run(Workers(2, {"--sleep=30"}));
  aborter.join();
  EXPECT_EQ(result.end, AttemptEnd::kAborted);
  EXPECT_EQ(result.abort_reason, "machine 1 rank 3 failed");
  EXPECT_LT(elapsed_, absl::Seconds(2));  // 0.31 s measured
}

TEST_F(SupervisorTest, HangIsDetectedAndNamesOneRankTheOthersAsWaiting) {
  SupervisorOptions options;
  options.hang_timeout = absl::Seconds(1);
  options.monitor_interval = absl::Milliseconds(50);
  std::vector<WorkerFailure> reported;
  AttemptResult result = Run(Workers(2, {"--progress=3", "--sleep=30"}), options, &reported);
  EXPECT_EQ(result.end, AttemptEnd::kHang);
  ASSERT_EQ(result.failures.size(), 1u);  // the root cause; the other rank is not "hung"
  EXPECT_THAT(result.failures[0].detail, HasSubstr("hang (inferred): rank "));
  EXPECT_THAT(result.failures[0].detail, HasSubstr("went idle first"));
  ASSERT_EQ(result.hang_notes.size(), 1u);
  EXPECT_THAT(result.hang_notes[0], HasSubstr("at step 3, outside collectives, idle for"));
  EXPECT_EQ(reported.size(), 1u);
  EXPECT_GE(elapsed_, absl::Seconds(1));
  EXPECT_LT(elapsed_, absl::Seconds(3.5));  // 1.04 s measured
}

TEST_F(SupervisorTest, HangNamesTheStoppedRankAndStopsItWithoutWaitingForTheGrace) {
  // Rank 1 is SIGSTOPped: it is the root cause, and the teardown's SIGCONT lets it die at
  // SIGTERM instead of at SIGKILL after the 30 s grace.
  SupervisorOptions options;
  options.hang_timeout = absl::Seconds(1);
  options.monitor_interval = absl::Milliseconds(50);
  options.shutdown_grace = absl::Seconds(30);
  std::thread stopper([this] {
    const std::string pid_file = dir_ + "/rank_1.pid";
    for (int i = 0; i < 200 && ReadPid(pid_file) <= 0; ++i) absl::SleepFor(absl::Milliseconds(10));
    ::kill(ReadPid(pid_file), SIGSTOP);
  });
  AttemptResult result = Run(Workers(2, {"--pid_dir=" + dir_, "--sleep=30"}), options);
  stopper.join();
  EXPECT_EQ(result.end, AttemptEnd::kHang);
  ASSERT_EQ(result.failures.size(), 1u);
  EXPECT_EQ(result.failures[0].rank, 1);
  EXPECT_THAT(result.failures[0].detail, HasSubstr("is stopped (process state T"));
  EXPECT_EQ(result.failures[0].exit.signal, SIGTERM);
  ASSERT_TRUE(result.hang_verdict.has_value());  // what elastic membership acts on
  EXPECT_EQ(result.hang_verdict->rank, 1);
  EXPECT_EQ(result.hang_verdict->machine_rank, 0);
  EXPECT_TRUE(result.hang_verdict_agreed);
  EXPECT_LT(elapsed_, absl::Seconds(3.5));  // 1.06 s measured
}

TEST_F(SupervisorTest, AStoppedWorkerDiesAtTheTeardownsSigterm) {
  SupervisorOptions options;
  options.shutdown_grace = absl::Seconds(30);
  std::thread aborter([this] {
    const std::string pid_file = dir_ + "/rank_0.pid";
    for (int i = 0; i < 200 && ReadPid(pid_file) <= 0; ++i) absl::SleepFor(absl::Milliseconds(10));
    ::kill(ReadPid(pid_file), SIGSTOP);
    abort_->Abort("machine 1 rank 3 failed");
  });
  AttemptResult result = Run(Workers(2, {"--pid_dir=" + dir_, "--sleep=30"}), options);
  aborter.join();
  EXPECT_EQ(result.end, AttemptEnd::kAborted);
  EXPECT_LT(elapsed_, absl::Seconds(2));  // 0.03 s measured
}

TEST_F(SupervisorTest, SpawnFailureStopsTheWorkersAlreadyStarted) {
  std::vector<WorkerLaunch> workers = Workers(2, {"--sleep=30"});
  workers[1].spec.path = "/nonexistent/train.bin";
  AttemptResult result = Run(std::move(workers));
  EXPECT_EQ(result.end, AttemptEnd::kSpawnFailed);
  EXPECT_EQ(std::string(result.spawn_error.message()),
            "spawn worker rank=1: execve /nonexistent/train.bin: No such file or directory");
  EXPECT_LT(elapsed_, absl::Seconds(2));  // 0.02 s measured
}

TEST_F(SupervisorTest, WorkersInheritNoDescriptorOfOurs) {
  std::set<int> expected = InheritableFds();
  expected.insert({0, 1, 2});
  AttemptResult result = Run(Workers(1, {"--list_fds"}));
  ASSERT_EQ(result.end, AttemptEnd::kSucceeded);
  std::string want = "[rank 0] FDS";
  for (int fd : expected) want += " " + std::to_string(fd);
  EXPECT_THAT(Drain(out_read_.get()), HasSubstr(want + "\n"));
}

TEST_F(SupervisorTest, ShebangScriptRunsAndNonExecutableIsRefused) {
  const std::string script = dir_ + "/train.sh";
  {
    UniqueFd fd(::open(script.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    const std::string text = "#!/bin/sh\necho \"script rank $RANK\"\n";
    ASSERT_EQ(::write(fd.get(), text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }
  auto refused = ResolveProgram(script, "");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  ::chmod(script.c_str(), 0755);
  auto resolved = ResolveProgram(script, "");
  ASSERT_TRUE(resolved.ok());
  std::vector<WorkerLaunch> workers = Workers(1, {});
  workers[0].spec.path = *resolved;
  workers[0].spec.argv = {script};
  AttemptResult result = Run(std::move(workers));
  EXPECT_EQ(result.end, AttemptEnd::kSucceeded);
  EXPECT_EQ(Drain(out_read_.get()), "[rank 0] script rank 0\n");
}

}  // namespace
}  // namespace accel::launcher
