#include "accel/error_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "accel/error.h"
#include "common/exit_codes.h"

namespace accel {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class ErrorFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Not pid-based: the threadsafe death test re-runs SetUp in a re-executed child.
    path_ = ::testing::TempDir() + "accel_worker_error_file_test.json";
    ::unlink(path_.c_str());
    ::setenv("ACCEL_ERROR_FILE", path_.c_str(), 1);
    ::setenv("RANK", "3", 1);
  }
  void TearDown() override {
    ::unsetenv("ACCEL_ERROR_FILE");
    ::unsetenv("RANK");
    ::unlink(path_.c_str());
  }
  std::string path_;
};

TEST_F(ErrorFileTest, RunWorkerRecordsTheExceptionAsJson) {
  const int rc = RunWorker([]() -> int {
    throw Error("all-reduce", "bucket 3 (rank 1 of 4)", "deadline \"300 s\" exceeded");
  });
  EXPECT_EQ(rc, kExitWorkerFailed);
  const std::string json = Slurp(path_);
  EXPECT_NE(
      json.find(R"("message": "all-reduce bucket 3 (rank 1 of 4): deadline \"300 s\" exceeded")"),
      std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("rank": 3})"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("time": )"), std::string::npos) << json;
}

// The file is replaced through a fresh, randomly named temporary file: a symlink planted at the
// old fixed temporary name (<path>.tmp) is not written through, and the file is private.
TEST_F(ErrorFileTest, NeverWritesThroughAPlantedTemporaryFile) {
  const std::string victim = path_ + ".victim";
  { std::ofstream(victim) << "precious\n"; }
  ::unlink((path_ + ".tmp").c_str());
  ASSERT_EQ(::symlink(victim.c_str(), (path_ + ".tmp").c_str()), 0);
  EXPECT_TRUE(RecordError("boom"));
  EXPECT_EQ(Slurp(victim), "precious\n");
  EXPECT_NE(Slurp(path_).find("boom"), std::string::npos);
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ::unlink((path_ + ".tmp").c_str());
  ::unlink(victim.c_str());
}

TEST_F(ErrorFileTest, RunWorkerPassesTheExitCodeThrough) {
  EXPECT_EQ(RunWorker([] { return 7; }), 7);
  EXPECT_TRUE(Slurp(path_).empty());
}

TEST_F(ErrorFileTest, NoVariableNoFile) {
  ::unsetenv("ACCEL_ERROR_FILE");
  EXPECT_FALSE(RecordError("x"));
}

TEST_F(ErrorFileTest, UncaughtExceptionIsRecordedBeforeAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        InstallTerminateHandler();
        std::thread([] { throw Error("connect gloo", "rank 2", "store get timed out"); }).join();
      },
      "");
  EXPECT_NE(Slurp(path_).find("connect gloo rank 2: store get timed out"), std::string::npos)
      << Slurp(path_);
}

}  // namespace
}  // namespace accel
