// ValidateConfig's one file-system check: log_dir must be a directory this user can write, or
// creatable under one.
#include "launcher/config/validate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;

std::string LogDirProblems(const std::string& log_dir) {
  Config c;
  c.use_cpu = true;
  c.log_dir = log_dir;
  SourceMap sources;
  return FormatDiagnostics(ValidateConfig(c, sources));
}

TEST(ValidateLogDirTest, ADirectoryToCreateUnderAWritableOneIsAccepted) {
  accel::testing::TempDir dir;
  EXPECT_EQ(LogDirProblems(dir.path()), "");
  EXPECT_EQ(LogDirProblems(dir.path() + "/new/deeper/logs"), "");
}

TEST(ValidateLogDirTest, AFileOrAPathThroughAFileIsAConfigError) {
  accel::testing::TempDir dir;
  const std::string file = dir.Write("plain.txt", "x");
  EXPECT_THAT(LogDirProblems(file), HasSubstr("log_dir " + file + " cannot hold the logs: " + file +
                                              " is not a directory"));
  EXPECT_THAT(LogDirProblems(file + "/logs"),
              HasSubstr("cannot hold the logs: " + file + "/logs: Not a directory"));
}

TEST(ValidateLogDirTest, NoLogDirIsNotChecked) { EXPECT_EQ(LogDirProblems(""), ""); }

}  // namespace
}  // namespace accel::launcher
