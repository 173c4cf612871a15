#include "common/exit_codes.h"

#include <signal.h>
#include <sys/wait.h>

#include "gtest/gtest.h"

namespace accel {
namespace {

TEST(ExitCodesTest, SignalsAreOneHundredTwentyEightPlusN) {
  EXPECT_EQ(ExitCodeForSignal(SIGINT), 130);
  EXPECT_EQ(ExitCodeForSignal(SIGKILL), 137);
}

TEST(ExitCodesTest, AWorkersOwnCodeIsPassedOnOnlyBelow128) {
  EXPECT_EQ(ExitCodeForWorker(5, 0), 5);
  EXPECT_EQ(ExitCodeForWorker(127, 0), 127);
  EXPECT_EQ(ExitCodeForWorker(128, 0), kExitWorkerFailed);
  EXPECT_EQ(ExitCodeForWorker(0, SIGKILL), kExitWorkerFailed);
  EXPECT_EQ(ExitCodeForWorker(0, 0), kExitWorkerFailed);  // reported as failed yet exited 0
  EXPECT_EQ(ExitCodeForWorker(-1, 0), kExitWorkerFailed);
}

TEST(ExitCodesTest, WaitStatusBecomesTheShellsCode) {
  EXPECT_EQ(ExitCodeFromWaitStatus(W_EXITCODE(3, 0)), 3);
  EXPECT_EQ(ExitCodeFromWaitStatus(W_EXITCODE(0, 0)), kExitOk);
  EXPECT_EQ(ExitCodeFromWaitStatus(W_EXITCODE(0, SIGKILL)), ExitCodeForSignal(SIGKILL));
}

}  // namespace
}  // namespace accel
