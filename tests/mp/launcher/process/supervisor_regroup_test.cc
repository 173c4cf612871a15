// Multi-process tests of the supervisor's regroup hook (elastic in-place recovery, supervisor.h
// RegroupHook) with real workers (fake_worker): an abort the hook answers keeps the same worker
// processes running; one it declines stops them as before; a later abort asks again.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "launcher/process/os_util.h"
#include "launcher/process/supervisor.h"
#include "tests/mp/launcher/process/supervisor_fixture.h"

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
        [&] {
          const bool answer = calls_ < static_cast<int>(answers.size()) && answers[calls_];
          ++calls_;
          if (answer) abort_->Reset();  // as the hook's rendezvous join does
          return answer;
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

}  // namespace
}  // namespace accel::launcher
