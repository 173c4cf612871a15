// Device and library probing on the machine the tests run on: no GPU comes with a reason, and
// libraries on disk are found.
#include <sys/stat.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/commands/env_report.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;

bool Exists(const char* path) {
  struct stat st;
  return stat(path, &st) == 0;
}

TEST(DeviceInfoTest, NoGpuComesWithAReason) {
  std::string why;
  const int count = CountGpus(&why);
  if (count > 0) GTEST_SKIP() << "this machine has " << count << " GPU(s)";
  EXPECT_FALSE(why.empty());
  const DeviceReport report = DetectDevices();
  EXPECT_TRUE(report.gpus.empty());
  EXPECT_EQ(report.gpu_error, why);
}

TEST(DeviceInfoTest, LibrariesOnDiskAreFound) {
  const DeviceReport report = DetectDevices();
  if (Exists("/usr/local/cuda/lib64/libcudart.so.13") ||
      Exists("/usr/local/cuda/lib64/libcudart.so")) {
    EXPECT_TRUE(report.cuda_runtime.found) << report.cuda_runtime.detail;
    EXPECT_THAT(report.cuda_runtime.version, ::testing::MatchesRegex("[0-9]+\\.[0-9]+"));
  }
  if (Exists("/usr/local/cuda/lib64/libnccl.so.2")) {
    EXPECT_TRUE(report.nccl.found) << report.nccl.detail;
    EXPECT_THAT(report.nccl.version, ::testing::MatchesRegex("2\\.[0-9]+\\.[0-9]+"));
  }
  if (Exists("/usr/local/cuda/lib64/libcudnn.so.9")) {
    EXPECT_TRUE(report.cudnn.found) << report.cudnn.detail;
    EXPECT_THAT(report.cudnn.version, ::testing::MatchesRegex("9\\.[0-9]+\\.[0-9]+"));
  }
  if (Exists("/usr/lib/x86_64-linux-gnu/libmpi.so.40")) {
    EXPECT_TRUE(report.mpi.found) << report.mpi.detail;
    EXPECT_THAT(report.mpi.version, HasSubstr("MPI"));
  }
  // Whatever is missing says why.
  for (const LibraryVersion* v :
       {&report.cuda_driver, &report.cuda_runtime, &report.cudnn, &report.nccl, &report.mpi}) {
    if (!v->found) {
      EXPECT_FALSE(v->detail.empty());
    }
  }
}

}  // namespace
}  // namespace accel::launcher
