#include "launcher/commands/env_report.h"

#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "common/version.h"
#include "launcher/config/schema.h"
#include "launcher/config/writer.h"

#ifndef ACCEL_LIBTORCH_VERSION
#define ACCEL_LIBTORCH_VERSION ""
#endif
#ifndef ACCEL_LIBTORCH_HEADER
#define ACCEL_LIBTORCH_HEADER ""
#endif

namespace accel::launcher {
namespace {

std::string OsName() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) != 0) continue;
    std::string value = line.substr(12);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    return value;
  }
  return "unknown (no /etc/os-release)";
}

std::string Compiler() {
#if defined(__clang__)
  return absl::StrCat("Clang ", __clang_version__);
#elif defined(__GNUC__)
  return absl::StrCat("GCC ", __VERSION__);
#else
  return "unknown";
#endif
}

std::string Library(const LibraryVersion& v) {
  if (!v.found) return absl::StrCat("not found (", v.detail, ")");
  return v.detail.empty() ? v.version : absl::StrCat(v.version, " (", v.detail, ")");
}

std::string GpuLine(const GpuInfo& gpu) {
  return absl::StrCat("GPU ", gpu.index, ": ", gpu.name, ", ", gpu.total_mib,
                      " MiB, compute capability (", gpu.cc_major, ", ", gpu.cc_minor, "), ",
                      gpu.sm_count, " SMs, fp16: ", gpu.fp16 ? "yes" : "no",
                      ", bf16: ", gpu.bf16 ? "yes" : "no");
}

// Debian's abseil has its own string_view (not std::string_view).
std::string Json(absl::string_view text) { return JsonQuote({text.data(), text.size()}); }

std::string JsonLibrary(const LibraryVersion& v) {
  return absl::StrCat("{\"found\": ", v.found ? "true" : "false",
                      ", \"version\": ", Json(v.version), ", \"detail\": ", Json(v.detail), "}");
}

}  // namespace

HostFacts GatherHostFacts() {
  HostFacts host;
  host.version = kVersion;
  host.os = OsName();
  struct utsname names;
  if (uname(&names) == 0) host.kernel = absl::StrCat(names.sysname, " ", names.release);
  host.cpu_cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) host.ram_mib = static_cast<long long>(pages) * page_size >> 20;
  host.compiler = Compiler();
  host.libtorch = std::string(ACCEL_LIBTORCH_VERSION).empty()
                      ? "not found (no torch/version.h at build time)"
                      : absl::StrCat(ACCEL_LIBTORCH_VERSION, " (", ACCEL_LIBTORCH_HEADER,
                                     ", at build time; the launcher does not link LibTorch)");
  host.grpc = absl::StrCat(grpc::Version(), " (core ", grpc_version_string(), ")");
  return host;
}

std::string FormatEnvReport(const HostFacts& host, const DeviceReport& devices,
                            const ResolvedConfig& config) {
  std::string out = absl::StrCat(
      "accel-launch version: ", host.version, "\nOS: ", host.os, "\nKernel: ", host.kernel,
      "\nCPU cores: ", host.cpu_cores, "\nRAM: ", host.ram_mib, " MiB\nCompiler: ", host.compiler,
      "\nLibTorch: ", host.libtorch, "\nCUDA driver: ", Library(devices.cuda_driver),
      "\nCUDA runtime: ", Library(devices.cuda_runtime), "\ncuDNN: ", Library(devices.cudnn),
      "\nNCCL: ", Library(devices.nccl), "\nMPI: ", Library(devices.mpi), "\ngRPC: ", host.grpc,
      "\n");
  if (devices.gpus.empty()) {
    absl::StrAppend(&out, "GPUs: no GPU (", devices.gpu_error, ")\n");
  } else {
    absl::StrAppend(&out, "GPUs: ", devices.gpus.size(), "\n");
    for (const GpuInfo& gpu : devices.gpus) absl::StrAppend(&out, "  ", GpuLine(gpu), "\n");
  }
  absl::StrAppend(&out, "Config file: ",
                  config.path.empty() ? "none (defaults for this machine)" : config.path, "\n");
  if (!config.problems.empty()) {
    absl::StrAppend(&out, "Config problems:\n", FormatDiagnostics(config.problems));
  }
  absl::StrAppend(&out, "Config in effect:\n", FormatResolvedConfig(config.config, config.sources));
  return out;
}

std::string FormatEnvReportJson(const HostFacts& host, const DeviceReport& devices,
                                const ResolvedConfig& config) {
  std::string gpus;
  for (const GpuInfo& gpu : devices.gpus) {
    absl::StrAppend(&gpus, gpus.empty() ? "" : ", ", "{\"index\": ", gpu.index,
                    ", \"name\": ", Json(gpu.name), ", \"total_mib\": ", gpu.total_mib,
                    ", \"compute_capability\": [", gpu.cc_major, ", ", gpu.cc_minor,
                    "], \"sm_count\": ", gpu.sm_count, ", \"fp16\": ", gpu.fp16 ? "true" : "false",
                    ", \"bf16\": ", gpu.bf16 ? "true" : "false", "}");
  }
  std::string keys;
  for (const KeySpec& spec : Schema()) {
    if (spec.kind == KeyKind::kIgnored || spec.kind == KeyKind::kSection) continue;
    absl::StrAppend(&keys, keys.empty() ? "" : ", ", Json(spec.name), ": ",
                    JsonValue(spec, config.config));
  }
  std::string problems;
  for (const Diagnostic& d : config.problems) {
    absl::StrAppend(&problems, problems.empty() ? "" : ", ", Json(FormatDiagnostic(d)));
  }
  return absl::StrCat(
      "{\"accel_launch_version\": ", Json(host.version), ", \"os\": ", Json(host.os),
      ", \"kernel\": ", Json(host.kernel), ", \"cpu_cores\": ", host.cpu_cores,
      ", \"ram_mib\": ", host.ram_mib, ", \"compiler\": ", Json(host.compiler),
      ", \"libtorch\": ", Json(host.libtorch),
      ", \"cuda_driver\": ", JsonLibrary(devices.cuda_driver),
      ", \"cuda_runtime\": ", JsonLibrary(devices.cuda_runtime),
      ", \"cudnn\": ", JsonLibrary(devices.cudnn), ", \"nccl\": ", JsonLibrary(devices.nccl),
      ", \"mpi\": ", JsonLibrary(devices.mpi), ", \"grpc\": ", Json(host.grpc), ", \"gpus\": [",
      gpus, "], \"gpu_error\": ", Json(devices.gpu_error), ", \"config_file\": ", Json(config.path),
      ", \"config\": {", keys, "}, \"config_problems\": [", problems, "]}\n");
}

}  // namespace accel::launcher
