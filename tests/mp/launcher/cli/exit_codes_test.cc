// The README's exit-code table is the contract: this test reads the table, checks that it lists
// exactly the codes of common/exit_codes.h, and produces every row with a real launch. A worker's
// own code (2 and 3 included) never passes through as one of the launcher's.
#include "common/exit_codes.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "common/net.h"
#include "common/unique_fd.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/files.h"
#include "tests/testing/launch_util.h"
#include "tests/testing/listener.h"

namespace accel::testing {
namespace {

using ::testing::HasSubstr;

const std::string kLauncher = ACCEL_LAUNCH_PATH;
const std::string kFake = FAKE_WORKER_PATH;

// Returns the README's "Exit codes" table: code ("0", "128+N") → meaning.
std::map<std::string, std::string> ReadmeTable() {
  std::istringstream readme(ReadFile(std::string(ACCEL_SOURCE_DIR) + "/README.md"));
  std::map<std::string, std::string> table;
  const std::regex row(R"(^\| *`?([0-9]+(\+N)?)`? *\| *(.+?) *\|$)");
  bool inside = false;
  for (std::string line; std::getline(readme, line);) {
    if (line.rfind("## ", 0) == 0) inside = line == "## Exit codes";
    std::smatch m;
    if (inside && std::regex_match(line, m, row)) table[m[1]] = m[3];
  }
  return table;
}

RunResult Launch(std::vector<std::string> args, absl::Duration timeout = absl::Seconds(60),
                 const std::function<void(pid_t)>& while_running = nullptr) {
  args.insert(args.begin(), {kLauncher, "--use_cpu"});
  return RunCommand(args, {}, timeout, while_running);
}

TEST(ExitCodesTest, TheReadmeTableListsExactlyTheLaunchersCodes) {
  const std::map<std::string, std::string> table = ReadmeTable();
  ASSERT_EQ(table.size(), 5u) << "the README's \"## Exit codes\" table has changed shape";
  EXPECT_THAT(table.at(std::to_string(kExitOk)), HasSubstr("finished"));
  EXPECT_THAT(table.at(std::to_string(kExitWorkerFailed)), HasSubstr("worker"));
  EXPECT_THAT(table.at(std::to_string(kExitUsage)), HasSubstr("nothing was launched"));
  EXPECT_THAT(table.at(std::to_string(kExitRendezvous)), HasSubstr("rendezvous"));
  EXPECT_THAT(table.at(std::to_string(kExitSignalBase) + "+N"), HasSubstr("signal N"));
}

TEST(ExitCodesTest, ZeroWhenEveryWorkerExitsZero) {
  EXPECT_EQ(Launch({"--num_processes", "2", kFake}).exit_code, kExitOk);
  EXPECT_EQ(Launch({kFake}).exit_code, kExitOk);
}

TEST(ExitCodesTest, OneForAFailedWorkerWhateverItsOwnCode) {
  for (const char* code : {"2", "3", "7"}) {
    for (const char* processes : {"1", "2"}) {
      RunResult r = Launch({"--num_processes", processes, kFake, std::string("--exit=") + code});
      EXPECT_EQ(r.exit_code, kExitWorkerFailed) << code << " x" << processes << r.err;
      EXPECT_THAT(r.err, HasSubstr(std::string("exit code ") + code));
    }
  }
  RunResult killed = Launch({"--num_processes", "2", kFake, "--fail_rank=1", "--signal=9"});
  EXPECT_EQ(killed.exit_code, kExitWorkerFailed) << killed.err;
}

TEST(ExitCodesTest, TwoWhenNothingWasLaunched) {
  TempDir dir;
  const std::string marker = dir.path() + "/ran";
  RunResult bad = Launch({"--num_processes", "3", "--num_machines", "2", "/usr/bin/touch", marker});
  EXPECT_EQ(bad.exit_code, kExitUsage);
  EXPECT_THAT(bad.err, HasSubstr("nothing was launched"));
  RunResult missing = Launch({dir.path() + "/missing.py"});
  EXPECT_EQ(missing.exit_code, kExitUsage);
  EXPECT_EQ(Launch({"--bogus", "/usr/bin/touch", marker}).exit_code, kExitUsage);
  EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "something ran";
}

TEST(ExitCodesTest, ThreeWhenTheRendezvousFails) {
  absl::StatusOr<int> port = PickFreePort("127.0.0.1");
  ASSERT_TRUE(port.ok());
  const UniqueFd listener = ListenOn("127.0.0.1", *port);
  ASSERT_TRUE(listener.valid());
  RunResult r =
      Launch({"--num_processes", "2", "--main_process_port", std::to_string(*port), kFake});
  EXPECT_EQ(r.exit_code, kExitRendezvous) << r.err;
  EXPECT_THAT(r.err, HasSubstr("is in use"));
}

TEST(ExitCodesTest, OneHundredTwentyEightPlusNWhenTheLauncherIsInterrupted) {
  for (const char* processes : {"1", "2"}) {
    RunResult r = Launch({"--num_processes", processes, kFake, "--sleep=30"}, absl::Seconds(30),
                         [](pid_t launcher) {
                           ::usleep(1500 * 1000);
                           ::kill(launcher, SIGTERM);
                         });
    EXPECT_EQ(r.exit_code, ExitCodeForSignal(SIGTERM)) << processes << r.err;
    // 1.5 s until the signal, then the stop: 1.53 s measured (3 runs, loaded 2-core VM).
    EXPECT_LT(r.elapsed, absl::Seconds(5));
  }
}

}  // namespace
}  // namespace accel::testing
