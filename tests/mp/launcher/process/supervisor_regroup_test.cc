// Multi-process tests of the supervisor's regroup hook (elastic in-place recovery, supervisor.h
// RegroupHook) with real workers (fake_worker, sh): an abort the hook answers keeps the same worker
// processes running; one it declines stops them as before; a later abort asks again; the workers'
// ranks follow the new generation's base rank in the output prefixes, the failure rows and the
// observer.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/process/os_util.h"
#include "launcher/process/supervisor.h"
#include "tests/mp/launcher/process/supervisor_fixture.h"
#include "tests/testing/pipes.h"

namespace accel::launcher {
namespace {

class RegroupTest : public SupervisorFixture {
 protected:
  // Two workers that sleep `sleep_s` and exit 0; `aborts` aborts 300 ms apart from another
  // thread; `answers` are the hook's answers, in order (false once they run out).
  AttemptResult Run(double sleep_s, int aborts, std::vector<bool> answers) {
    std::vector<WorkerLaunch> workers = Workers(2, {"--sleep=" + std::to_string(sleep_s)});
    OutputOptions output;
    output.console_stdout = out_write_.get();
    output.console_stderr = err_write_.get();
    OutputRouter router(output);
    SupervisorOptions options;
    options.host = "testhost";
    Supervisor supervisor(options, *signals_, *abort_);
    std::thread aborter([this, aborts] {
      for (int i = 0; i < aborts; ++i) {
        absl::SleepFor(absl::Milliseconds(300));
        abort_->Abort("restart (attempt " + std::to_string(i + 1) + ")");
      }
    });
    const absl::Time start = absl::Now();
    AttemptResult result = supervisor.Run(
        std::move(workers), router, [](const WorkerFailure&) {}, nullptr, nullptr, nullptr,
        [&]() -> std::optional<Regroup> {
          const bool answer = calls_ < static_cast<int>(answers.size()) && answers[calls_];
          ++calls_;
          if (!answer) return std::nullopt;
          abort_->Reset();   // as the hook's rendezvous join does
          return Regroup{};  // ranks 0 and 1 again
        });
    elapsed_ = absl::Now() - start;
    aborter.join();
    return result;
  }

  int calls_ = 0;
};

// The workers sleep 1.5 s: kept through two regroups, they finish their sleep and exit 0, which
// only the same processes can (a restart would have begun a new 1.5 s).
TEST_F(RegroupTest, AnsweredAbortsKeepTheSameWorkersRunning) {
  AttemptResult result = Run(1.5, 2, {true, true});
  EXPECT_EQ(result.end, AttemptEnd::kSucceeded);
  EXPECT_TRUE(result.failures.empty());
  EXPECT_EQ(calls_, 2);
  EXPECT_GE(elapsed_, absl::Seconds(1.5));
  EXPECT_LT(elapsed_, absl::Seconds(5));
}

TEST_F(RegroupTest, ADeclinedAbortStopsTheWorkersAsBefore) {
  AttemptResult result = Run(30, 1, {false});
  EXPECT_EQ(result.end, AttemptEnd::kAborted);
  EXPECT_EQ(result.abort_reason, "restart (attempt 1)");
  EXPECT_EQ(calls_, 1);
  EXPECT_LT(elapsed_, absl::Seconds(5));  // SIGTERM, not the 30 s sleep
}

TEST_F(RegroupTest, AnAbortAfterARegroupAsksAgainAndMayStop) {
  AttemptResult result = Run(30, 2, {true, false});
  EXPECT_EQ(result.end, AttemptEnd::kAborted);
  EXPECT_EQ(calls_, 2);
  EXPECT_GE(elapsed_, absl::Milliseconds(550));
  EXPECT_LT(elapsed_, absl::Seconds(5));
}

// Records what the supervisor tells an observer.
class Recorder final : public WorkerObserver {
 public:
  void Started(const WorkerLaunch& worker, pid_t pid) override { started[worker.rank] = pid; }
  void Exited(int rank, const ExitStatus& status) override { exited[rank] = status; }
  std::map<int, pid_t> started;
  std::map<int, ExitStatus> exited;
};

using accel::testing::Drain;

// Machine 2 of 3 (ranks 4 and 5) goes on as machine 1 of 2 after machine 1 left: its workers are
// ranks 2 and 3 from the regroup on. Each prints a line before and after it; local rank 1 then
// fails. The lines before keep the old prefixes, those after have the new ones; the failure row
// and its stderr tail name rank 3; the new observer is told of both running workers under their
// new ranks (the same pids), and of their exits.
TEST_F(RegroupTest, TheWorkersRanksFollowTheNewGeneration) {
  std::vector<WorkerLaunch> workers = Workers(2, {});
  for (WorkerLaunch& w : workers) {
    w.rank = 4 + w.local_rank;
    w.spec.path = "/bin/sh";
    w.spec.argv = {"sh", "-c",
                   "echo before; sleep 0.8; echo after; echo \"after on stderr\" >&2; "
                   "if [ \"$LOCAL_RANK\" = 1 ]; then exit 3; fi; sleep 30"};
    w.spec.env.push_back("LOCAL_RANK=" + std::to_string(w.local_rank));
    w.spec.env.push_back("PATH=/usr/bin:/bin");
  }
  OutputOptions output;
  output.console_stdout = out_write_.get();
  output.console_stderr = err_write_.get();
  OutputRouter router(output);
  Supervisor supervisor(SupervisorOptions{}, *signals_, *abort_);
  std::thread aborter([this] {
    absl::SleepFor(absl::Milliseconds(300));
    abort_->Abort("restart (attempt 1)");
  });
  Recorder first;
  Recorder second;
  AttemptResult result = supervisor.Run(
      std::move(workers), router, [](const WorkerFailure&) {}, nullptr, nullptr, &first,
      [&]() -> std::optional<Regroup> {
        ++calls_;
        abort_->Reset();
        return Regroup{2, nullptr, &second};
      });
  aborter.join();
  EXPECT_EQ(calls_, 1);
  ASSERT_EQ(result.end, AttemptEnd::kWorkerFailed);
  ASSERT_EQ(result.failures.size(), 1u);
  EXPECT_EQ(result.failures[0].rank, 3);
  EXPECT_EQ(result.failures[0].local_rank, 1);
  EXPECT_EQ(result.failures[0].exit.exit_code, 3);
  EXPECT_THAT(result.failures[0].stderr_tail, ::testing::ElementsAre("after on stderr"));
  const std::string out = Drain(out_read_.get());
  for (const char* line :
       {"[rank 4] before\n", "[rank 5] before\n", "[rank 2] after\n", "[rank 3] after\n"}) {
    EXPECT_THAT(out, ::testing::HasSubstr(line));
  }
  EXPECT_THAT(out, ::testing::Not(::testing::HasSubstr("[rank 4] after")));
  EXPECT_THAT(out, ::testing::Not(::testing::HasSubstr("[rank 5] after")));
  EXPECT_THAT(Drain(err_read_.get()), ::testing::HasSubstr("[rank 3] after on stderr\n"));
  ASSERT_EQ(first.started.size(), 2u);
  ASSERT_EQ(second.started.size(), 2u);
  EXPECT_EQ(second.started.at(2), first.started.at(4));
  EXPECT_EQ(second.started.at(3), first.started.at(5));
  EXPECT_TRUE(first.exited.empty());
  EXPECT_EQ(second.exited.size(), 2u);
  EXPECT_EQ(second.exited.count(3), 1u);
}

}  // namespace
}  // namespace accel::launcher
