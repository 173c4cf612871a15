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

}  // namespace
}  // namespace accel::launcher
