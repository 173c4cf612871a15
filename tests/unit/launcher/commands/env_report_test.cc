// `accel-launch env`: the report names every piece, in text and JSON.
#include "launcher/commands/env_report.h"

#include <sys/stat.h>
#include <sys/sysinfo.h>

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;

TEST(EnvReportTest, TextNamesEveryPiece) {
  HostFacts host = GatherHostFacts();
  // Each fact against the kernel's own account of it.
  EXPECT_EQ(host.cpu_cores, ::get_nprocs());
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  long long kib = 0;
  while (meminfo >> key && key != "MemTotal:") meminfo.ignore(1 << 10, '\n');
  ASSERT_TRUE(meminfo >> kib) << "no MemTotal in /proc/meminfo";
  EXPECT_NEAR(host.ram_mib, kib >> 10, 1);  // the same total, rounded down in other units
  std::ifstream release("/proc/sys/kernel/osrelease");
  std::string kernel;
  release >> kernel;
  EXPECT_EQ(host.kernel, "Linux " + kernel);
  EXPECT_THAT(host.grpc, ::testing::MatchesRegex("[0-9]+\\.[0-9]+\\.[0-9]+ \\(core [0-9.]+\\)"));
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
