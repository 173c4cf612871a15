// Device and library probing (common/device_info.cc) over fake CUDA driver, runtime, NCCL and
// cuDNN libraries (tests/testing/fake_cuda.cc, found first through this binary's RUNPATH): every
// field decoded exactly, both version encodings, and a driver without devices giving its reason.
// MPI is the machine's own (Open MPI from scripts/install-deps).
#include "common/device_info.h"

#include <stdlib.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class DeviceInfoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("FAKE_CUDA_OLD");
    ::unsetenv("FAKE_CUDA_NO_DEVICE");
  }
  void TearDown() override { SetUp(); }
};

TEST_F(DeviceInfoTest, TheFakeLibrariesAreTheOnesLoaded) {
  const DeviceReport report = DetectDevices();
  for (const LibraryVersion* v :
       {&report.cuda_driver, &report.cuda_runtime, &report.cudnn, &report.nccl}) {
    EXPECT_TRUE(v->found) << v->detail;
    EXPECT_THAT(v->detail, StartsWith(std::string(ACCEL_FAKE_CUDA_DIR) + "/"))
        << "a real library was loaded (LD_LIBRARY_PATH set?): this test checks the fakes";
  }
}

TEST_F(DeviceInfoTest, EveryGpuFieldIsDecoded) {
  std::string why = "unchanged";
  EXPECT_EQ(CountGpus(&why), 2);
  EXPECT_EQ(why, "");
  const DeviceReport report = DetectDevices();
  EXPECT_EQ(report.gpu_error, "");
  ASSERT_EQ(report.gpus.size(), 2u);
  const GpuInfo& t4 = report.gpus[0];
  EXPECT_EQ(t4.index, 0);
  EXPECT_EQ(t4.name, "Fake T4");
  EXPECT_EQ(t4.total_mib, 15360);
  EXPECT_EQ(t4.cc_major, 7);
  EXPECT_EQ(t4.cc_minor, 5);
  EXPECT_EQ(t4.sm_count, 40);
  EXPECT_TRUE(t4.fp16);
  EXPECT_FALSE(t4.bf16);  // bf16 needs compute capability 8.0
  const GpuInfo& a100 = report.gpus[1];
  EXPECT_EQ(a100.index, 1);
  EXPECT_EQ(a100.name, "Fake A100");
  EXPECT_EQ(a100.total_mib, 81920);
  EXPECT_EQ(a100.cc_major * 10 + a100.cc_minor, 80);
  EXPECT_EQ(a100.sm_count, 108);
  EXPECT_TRUE(a100.fp16);
  EXPECT_TRUE(a100.bf16);
}

TEST_F(DeviceInfoTest, VersionsAreDecodedInBothEncodings) {
  DeviceReport report = DetectDevices();
  EXPECT_EQ(report.cuda_driver.version, "12.4");
  EXPECT_EQ(report.cuda_runtime.version, "12.1");
  EXPECT_EQ(report.nccl.version, "2.23.4");  // 10000*major + 100*minor + patch
  EXPECT_EQ(report.cudnn.version, "9.1.0");  // the same, cuDNN 9
  ::setenv("FAKE_CUDA_OLD", "1", 1);
  report = DetectDevices();
  EXPECT_EQ(report.nccl.version, "2.7.8");   // before 2.9: 1000*major + 100*minor + patch
  EXPECT_EQ(report.cudnn.version, "8.9.7");  // cuDNN 8: the same
}

TEST_F(DeviceInfoTest, NoDeviceComesWithTheDriversReason) {
  ::setenv("FAKE_CUDA_NO_DEVICE", "1", 1);
  std::string why;
  EXPECT_EQ(CountGpus(&why), 0);
  EXPECT_EQ(why, "cuInit: no CUDA-capable device is detected");
  const DeviceReport report = DetectDevices();
  EXPECT_TRUE(report.gpus.empty());
  EXPECT_EQ(report.gpu_error, why);
  EXPECT_EQ(report.cuda_driver.version, "12.4");  // the driver itself is there
}

TEST_F(DeviceInfoTest, MpiIsTheMachinesOpenMpi) {
  const DeviceReport report = DetectDevices();
  ASSERT_TRUE(report.mpi.found) << "libmpi.so.40 (Debian's openmpi, scripts/install-deps): "
                                << report.mpi.detail;
  EXPECT_THAT(report.mpi.version, StartsWith("Open MPI v"));
  EXPECT_THAT(report.mpi.detail, HasSubstr("libmpi.so"));
}

}  // namespace
}  // namespace accel
