// The fixture of the accel-launch multi-process tests (agent_test.cc, agent_io_test.cc): a
// private directory per test, the test process a child subreaper (orphaned workers come back to
// it and are checked by pid), and Launch() to run accel-launch on the CPU.
#ifndef ACCEL_TESTS_MP_LAUNCHER_AGENT_LAUNCH_TEST_FIXTURE_H_
#define ACCEL_TESTS_MP_LAUNCHER_AGENT_LAUNCH_TEST_FIXTURE_H_

#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "common/exit_codes.h"
#include "common/net.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/process/os_util.h"
#include "tests/testing/files.h"
#include "tests/testing/launch_util.h"
#include "tests/testing/skip.h"

namespace accel::testing {

inline const std::string kLauncher = ACCEL_LAUNCH_PATH;
inline const std::string kFake = FAKE_WORKER_PATH;

class LaunchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0); }
  void SetUp() override {
    dir_ = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
           "/accel_launch_test_XXXXXX";
    ASSERT_NE(::mkdtemp(dir_.data()), nullptr);
  }
  void TearDown() override {
    // Every process the launcher started is gone: nothing comes back to us, nothing is left.
    int status = 0;
    const pid_t left = ::waitpid(-1, &status, WNOHANG);
    EXPECT_EQ(left, -1) << "a worker outlived its launcher: pid " << left << " "
                        << (WIFSIGNALED(status) ? "killed by signal " : "exited with ")
                        << (WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    launcher::RemoveTree(dir_);
  }
  // Runs accel-launch on the CPU with `options`, then the program and its args.
  RunResult Launch(std::vector<std::string> options, const std::vector<std::string>& program,
                   absl::Duration timeout = absl::Seconds(60),
                   const std::function<void(pid_t)>& while_running = nullptr) {
    std::vector<std::string> argv = {kLauncher, "--use_cpu"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), program.begin(), program.end());
    return RunCommand(argv, {}, timeout, while_running);
  }
  std::string dir_;
};

}  // namespace accel::testing

#endif  // ACCEL_TESTS_MP_LAUNCHER_AGENT_LAUNCH_TEST_FIXTURE_H_
