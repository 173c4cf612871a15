// `accel-launch env` facts on the machine the tests run on, and the report's wording.
#include <sys/stat.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/env_report.h"

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

TEST(EnvReportTest, TextNamesEveryPiece) {
  HostFacts host = GatherHostFacts();
  EXPECT_GT(host.cpu_cores, 0);
  EXPECT_GT(host.ram_mib, 0);
  EXPECT_FALSE(host.grpc.empty());
  DeviceReport devices;
  devices.gpu_error = "cuInit: CUDA driver version is insufficient";
  devices.cuda_runtime = {true, "13.0", "/usr/local/cuda/lib64/libcudart.so.13"};
  devices.cuda_driver = {false, "", "dlopen libcuda.so.1: no such file"};
  ResolvedConfig config;
  config.path = "/etc/x.yaml";
  const std::string text = FormatEnvReport(host, devices, config);
  for (const char* label : {"accel-launch version: ", "\nOS: ", "\nKernel: ", "\nCPU cores: ",
                            "\nRAM: ", "\nCompiler: ", "\nLibTorch: ", "\nCUDA driver: ",
                            "\nCUDA runtime: ", "\ncuDNN: ", "\nNCCL: ", "\nMPI: ", "\ngRPC: "}) {
    EXPECT_THAT(text, HasSubstr(label));
  }
  EXPECT_THAT(text, HasSubstr("CUDA runtime: 13.0 (/usr/local/cuda/lib64/libcudart.so.13)\n"));
  EXPECT_THAT(text, HasSubstr("CUDA driver: not found (dlopen libcuda.so.1: no such file)\n"));
  EXPECT_THAT(text, HasSubstr("GPUs: no GPU (cuInit: CUDA driver version is insufficient)\n"));
  EXPECT_THAT(text, HasSubstr("Config file: /etc/x.yaml\nConfig in effect:\n"));

  GpuInfo gpu;
  gpu.name = "NVIDIA H200";
  gpu.total_mib = 143771;
  gpu.cc_major = 9;
  gpu.sm_count = 132;
  gpu.fp16 = gpu.bf16 = true;
  devices.gpus = {gpu};
  EXPECT_THAT(FormatEnvReport(host, devices, config),
              HasSubstr("  GPU 0: NVIDIA H200, 143771 MiB, compute capability (9, 0), 132 SMs, "
                        "fp16: yes, bf16: yes\n"));
  EXPECT_THAT(FormatEnvReportJson(host, devices, config),
              HasSubstr("\"gpus\": [{\"index\": 0, \"name\": \"NVIDIA H200\", \"total_mib\": "
                        "143771, \"compute_capability\": [9, 0], \"sm_count\": 132, \"fp16\": "
                        "true, \"bf16\": true}]"));
}

}  // namespace
}  // namespace accel::launcher
