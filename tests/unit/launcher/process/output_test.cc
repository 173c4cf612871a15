// Unit tests of the output router: prefixes, whole lines, log files, the rank filter, the stderr
// tail. Pipes and files only; no processes.
#include "launcher/process/output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/process/failure_report.h"
#include "launcher/process/hang.h"
#include "launcher/process/os_util.h"
#include "launcher/process/subprocess.h"
#include "tests/testing/files.h"
#include "tests/testing/pipes.h"

namespace accel::launcher {
namespace {

using accel::testing::ReadFile;

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using accel::testing::Drain;

void Write(const UniqueFd& fd, const std::string& text) {
  ASSERT_EQ(::write(fd.get(), text.data(), text.size()), static_cast<ssize_t>(text.size()));
}

// Feeds everything readable from the router's pipes until all are closed.
void Pump(OutputRouter& router) {
  for (int i = 0; i < 100 && !router.AllClosed(); ++i) {
    std::vector<pollfd> fds;
    router.AppendPollFds(&fds);
    ASSERT_GT(::poll(fds.data(), fds.size(), 1000), 0);
    for (const pollfd& p : fds) {
      if (p.revents != 0) router.OnReadable(p.fd);
    }
  }
  ASSERT_TRUE(router.AllClosed());
}

class OutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto out = MakePipe();
    auto err = MakePipe();
    ASSERT_TRUE(out.ok() && err.ok());
    console_out_read_ = std::move(out->first);
    console_out_write_ = std::move(out->second);
    console_err_read_ = std::move(err->first);
    console_err_write_ = std::move(err->second);
  }
  OutputOptions Options() {
    OutputOptions o;
    o.console_stdout = console_out_write_.get();
    o.console_stderr = console_err_write_.get();
    return o;
  }
  UniqueFd console_out_read_, console_out_write_, console_err_read_, console_err_write_;
};

TEST_F(OutputTest, PartialWritesBecomeWholePrefixedLines) {
  OutputRouter router(Options());
  auto r0 = router.AddWorker(0);
  auto r1 = router.AddWorker(1);
  ASSERT_TRUE(r0.ok() && r1.ok());
  Write(r0->stdout_write, "hel");
  Write(r1->stdout_write, "other ");
  std::vector<pollfd> fds;
  router.AppendPollFds(&fds);
  ASSERT_GT(::poll(fds.data(), fds.size(), 1000), 0);
  for (const pollfd& p : fds) {
    if (p.revents != 0) router.OnReadable(p.fd);
  }
  EXPECT_EQ(Drain(console_out_read_.get()), "");  // no newline yet: nothing printed
  Write(r0->stdout_write, "lo\nworld\nend-without-newline");
  Write(r1->stdout_write, "rank\n");
  Write(r1->stderr_write, "warn\n");
  r0->stdout_write.reset();
  r0->stderr_write.reset();
  r1->stdout_write.reset();
  r1->stderr_write.reset();
  Pump(router);
  const std::string out = Drain(console_out_read_.get());
  EXPECT_THAT(out, HasSubstr("[rank 0] hello\n[rank 0] world\n"));
  EXPECT_THAT(out, HasSubstr("[rank 0] end-without-newline\n"));
  EXPECT_THAT(out, HasSubstr("[rank 1] other rank\n"));
  EXPECT_EQ(out.size(), std::string("[rank 0] hello\n[rank 0] world\n[rank 0] end-without-newline\n"
                                    "[rank 1] other rank\n")
                            .size());
  EXPECT_EQ(Drain(console_err_read_.get()), "[rank 1] warn\n");
  EXPECT_THAT(router.StderrTail(1), ElementsAre("warn"));
}

TEST_F(OutputTest, LogFilesKeepEverythingAndTheFilterLimitsTheConsole) {
  const accel::testing::TempDir temp;
  const std::string& dir = temp.path();
  OutputOptions o = Options();
  o.attempt_dir = dir + "/run/attempt_0";
  o.ranks_filter = {1};
  o.tail_lines = 2;
  OutputRouter router(o);
  auto r0 = router.AddWorker(0);
  auto r1 = router.AddWorker(1);
  ASSERT_TRUE(r0.ok() && r1.ok()) << r0.status();
  Write(r0->stdout_write, "zero\n");
  Write(r0->stderr_write, "e1\ne2\ne3\n");
  Write(r1->stdout_write, "one\n");
  r0->stdout_write.reset();
  r0->stderr_write.reset();
  r1->stdout_write.reset();
  r1->stderr_write.reset();
  Pump(router);
  EXPECT_EQ(Drain(console_out_read_.get()), "[rank 1] one\n");
  EXPECT_EQ(Drain(console_err_read_.get()), "");
  EXPECT_EQ(ReadFile(dir + "/run/attempt_0/rank_0/stdout.log"), "zero\n");
  EXPECT_EQ(ReadFile(dir + "/run/attempt_0/rank_0/stderr.log"), "e1\ne2\ne3\n");
  EXPECT_EQ(ReadFile(dir + "/run/attempt_0/rank_1/stdout.log"), "one\n");
  EXPECT_THAT(router.StderrTail(0), ElementsAre("e2", "e3"));
  RemoveTree(dir);
}

TEST_F(OutputTest, DedupWindowMergesTheConsoleNotTheLogFiles) {
  const accel::testing::TempDir temp;
  const std::string& dir = temp.path();
  OutputOptions o = Options();
  o.attempt_dir = dir + "/attempt_0";
  o.dedup_window = absl::Seconds(30);  // only "every rank printed it" or the end lets lines out
  OutputRouter router(o);
  std::vector<WorkerPipes> pipes;
  for (int rank = 0; rank < 3; ++rank) {
    auto p = router.AddWorker(rank);
    ASSERT_TRUE(p.ok()) << p.status();
    pipes.push_back(*std::move(p));
  }
  for (int rank = 0; rank < 3; ++rank) Write(pipes[rank].stderr_write, "warning: same\n");
  Write(pipes[1].stdout_write, "loss 0.5\n");
  for (WorkerPipes& p : pipes) {
    p.stdout_write.reset();
    p.stderr_write.reset();
  }
  Pump(router);
  EXPECT_EQ(router.NextFlush(), absl::InfiniteFuture());
  EXPECT_EQ(Drain(console_err_read_.get()), "[ranks 0-2] warning: same\n");
  EXPECT_EQ(Drain(console_out_read_.get()), "[rank 1] loss 0.5\n");
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(ReadFile(absl::StrCat(dir, "/attempt_0/rank_", rank, "/stderr.log")),
              "warning: same\n");
  }
  RemoveTree(dir);
}

TEST_F(OutputTest, ConsoleOffWritesOnlyFiles) {
  const accel::testing::TempDir temp;
  const std::string& dir = temp.path();
  OutputOptions o = Options();
  o.attempt_dir = dir;
  o.console = false;
  OutputRouter router(o);
  auto r0 = router.AddWorker(0);
  ASSERT_TRUE(r0.ok());
  Write(r0->stdout_write, "quiet\n");
  r0->stdout_write.reset();
  r0->stderr_write.reset();
  Pump(router);
  EXPECT_EQ(Drain(console_out_read_.get()), "");
  EXPECT_EQ(ReadFile(dir + "/rank_0/stdout.log"), "quiet\n");
  RemoveTree(dir);
}

}  // namespace
}  // namespace accel::launcher
