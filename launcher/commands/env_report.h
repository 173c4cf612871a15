// `accel-launch env`: what is installed and in effect, like `accelerate env` — accel-launch
// version, OS/kernel, CPU cores, RAM, compiler, LibTorch (from its header at build time; the
// launcher does not link LibTorch), CUDA driver/runtime, cuDNN, NCCL, MPI, gRPC, each GPU, then
// the config in effect and its path. Missing pieces read "not found (<reason>)".
#ifndef ACCEL_LAUNCHER_COMMANDS_ENV_REPORT_H_
#define ACCEL_LAUNCHER_COMMANDS_ENV_REPORT_H_

#include <string>
#include <vector>

#include "common/device_info.h"
#include "launcher/config/resolve.h"

namespace accel::launcher {

struct HostFacts {
  std::string version;  // accel-launch's
  std::string os;       // PRETTY_NAME from /etc/os-release
  std::string kernel;   // uname -sr
  int cpu_cores = 0;
  long long ram_mib = 0;
  std::string compiler;  // the compiler that built accel-launch
  std::string libtorch;  // LibTorch version from torch/version.h at build time, or "not found"
  std::string grpc;      // grpc::Version() and grpc_version_string() (the core's)
};

// Reads the host facts (uname, sysconf, /etc/os-release, build-time versions).
HostFacts GatherHostFacts();

// Returns the human-readable report.
std::string FormatEnvReport(const HostFacts& host, const DeviceReport& devices,
                            const ResolvedConfig& config);

// Returns the same as one JSON object.
std::string FormatEnvReportJson(const HostFacts& host, const DeviceReport& devices,
                                const ResolvedConfig& config);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_COMMANDS_ENV_REPORT_H_
