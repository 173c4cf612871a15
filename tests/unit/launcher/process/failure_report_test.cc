// Unit tests of the failure report: the error file message, root cause first, the exit code.
#include "launcher/process/failure_report.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "common/exit_codes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/process/hang.h"
#include "launcher/process/os_util.h"
#include "launcher/process/output.h"
#include "launcher/process/subprocess.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

using accel::testing::ReadFile;

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(FailureReportTest, ReadsTheErrorFileMessage) {
  EXPECT_EQ(
      JsonStringField(R"({"message": "CUDA \"oom\"\nat step 3", "time": 1, "rank": 2})", "message"),
      "CUDA \"oom\"\nat step 3");
  EXPECT_EQ(JsonStringField(R"({"time": 1})", "message"), "");
  EXPECT_EQ(ReadErrorFileMessage("/nonexistent/accel/error.json"), "");
}

TEST(FailureReportTest, RootCauseIsTheEarliestAndSetsTheExitCode) {
  WorkerFailure late;
  late.rank = 1;
  late.pid = 222;
  late.exit.signal = 15;
  late.time = absl::FromUnixSeconds(200);
  WorkerFailure early;
  early.rank = 3;
  early.local_rank = 1;
  early.pid = 111;
  early.exit.exit_code = 7;
  early.time = absl::FromUnixSeconds(100);
  early.error_message = "loss is NaN";
  early.stderr_tail = {"Traceback", "ValueError: NaN"};
  std::vector<WorkerFailure> failures = {late, early};
  SortRootCauseFirst(&failures);
  EXPECT_EQ(failures[0].rank, 3);
  const std::string report = FormatFailureReport(failures, "title");
  EXPECT_THAT(report, HasSubstr("root cause"));
  EXPECT_LT(report.find("111"), report.find("222"));
  EXPECT_THAT(report, HasSubstr("exit code 7"));
  EXPECT_THAT(report, HasSubstr("signal 15 (SIGTERM)"));
  EXPECT_THAT(report, HasSubstr("rank 3 error file: loss is NaN"));
  EXPECT_THAT(report, HasSubstr("| ValueError: NaN"));
}

TEST(FailureReportTest, AMachineRowIsItsMessageNotAWorkerRow) {
  WorkerFailure lost;
  lost.machine_rank = 1;
  lost.host = "b";
  lost.rank = -1;
  lost.detail = "machine 1 lost: no heartbeat for 3.0 s (host b, address 10.0.0.2)";
  EXPECT_EQ(FormatFailureReport({lost}, "title"),
            "title\n  root cause machine 1 lost: no heartbeat for 3.0 s (host b, address "
            "10.0.0.2)\n");
  WorkerFailure interrupted;
  interrupted.machine_rank = 0;
  interrupted.host = "a";
  interrupted.rank = -1;
  interrupted.detail = "launcher interrupted";
  EXPECT_EQ(DescribeCause(interrupted), "machine 0 (host a): launcher interrupted");
  WorkerFailure worker;
  worker.machine_rank = 1;
  worker.host = "b";
  worker.rank = 3;
  worker.local_rank = -1;  // a rank of another machine: local rank and pid unknown
  worker.exit.signal = 9;
  const std::string report = FormatFailureReport({worker, lost}, "title");
  EXPECT_THAT(report, HasSubstr("root cause 1       b                3     ?     ?        "
                                "signal 9 (SIGKILL)"));
  EXPECT_THAT(report, HasSubstr("  also       machine 1 lost"));
  EXPECT_EQ(DescribeCause(worker), "rank 3 on machine 1 (host b): signal 9 (SIGKILL)");
}

}  // namespace
}  // namespace accel::launcher
