// Device and library facts gathered WITHOUT linking LibTorch or CUDA: the CUDA driver, runtime,
// NCCL, cuDNN and MPI libraries are dlopen'ed when present. Used by `accel-launch env`, by the
// agent's device detection (GPU count, fallback rules) and by the gpu device-info test.
// Never throws, never crashes: what is missing is reported with the reason.
#ifndef ACCEL_COMMON_DEVICE_INFO_H_
#define ACCEL_COMMON_DEVICE_INFO_H_

#include <cstdint>
#include <string>
#include <vector>

namespace accel {

struct GpuInfo {
  int index = 0;
  std::string name;
  std::int64_t total_mib = 0;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  bool fp16 = false;  // fast fp16: compute capability >= 5.3 (tensor cores >= 7.0)
  bool bf16 = false;  // native bf16: compute capability >= 8.0 (not a Tesla T4)
};

// A library version or "not found" with the reason.
struct LibraryVersion {
  bool found = false;
  std::string version;  // e.g. "13.0", "2.27.7", "9.10.2"
  std::string detail;   // the path it came from, or why it was not found
};

struct DeviceReport {
  std::vector<GpuInfo> gpus;  // visible GPUs (CUDA_VISIBLE_DEVICES applies)
  std::string gpu_error;  // why there are none, e.g. "cuInit: CUDA driver version is insufficient"
  LibraryVersion cuda_driver;
  LibraryVersion cuda_runtime;
  LibraryVersion cudnn;
  LibraryVersion nccl;
  LibraryVersion mpi;
};

// Returns the number of visible GPUs (0 with no driver or device). Cheap: driver API only.
int CountGpus(std::string* why_none = nullptr);

// Gathers everything above. Takes tens of milliseconds when CUDA libraries are present.
DeviceReport DetectDevices();

}  // namespace accel

#endif  // ACCEL_COMMON_DEVICE_INFO_H_
