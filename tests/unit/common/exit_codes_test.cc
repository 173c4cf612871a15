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

TEST(ExitCodesTest, TheLaunchersOwnCodesAreDistinct) {
  const int codes[] = {kExitOk, kExitWorkerFailed, kExitUsage, kExitRendezvous};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(codes[i], i);
  }
  EXPECT_GT(ExitCodeForSignal(1), kExitExecFailed);
}

TEST(ExitCodesTest, WaitStatusBecomesTheShellsCode) {
  EXPECT_EQ(ExitCodeFromWaitStatus(W_EXITCODE(3, 0)), 3);
  EXPECT_EQ(ExitCodeFromWaitStatus(W_EXITCODE(0, 0)), kExitOk);
  EXPECT_EQ(ExitCodeFromWaitStatus(W_EXITCODE(0, SIGKILL)), ExitCodeForSignal(SIGKILL));
}

}  // namespace
}  // namespace accel
