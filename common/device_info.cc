// Device and library facts through dlopen: nothing here links CUDA, NCCL, cuDNN or MPI.
#include "common/device_info.h"

#include <dlfcn.h>

#include <cstddef>
#include <string>

namespace accel {
namespace {

constexpr char kCudaLibDir[] = "/usr/local/cuda/lib64/";

// CUDA driver API subset (cuda.h), declared here so no CUDA header is needed.
using CUresult = int;
using CUdevice = int;
constexpr int kAttrSmCount = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrCcMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrCcMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

struct Loaded {
  void* handle = nullptr;
  std::string error;  // dlerror() of the last attempt when handle is null
};

// Opens the first library that loads: each name by the normal search, then under kCudaLibDir
// when `cuda_dir` is set. Handles are never closed (CUDA libraries do not support unloading).
Loaded Open(std::initializer_list<const char*> names, bool cuda_dir) {
  Loaded loaded;
  for (const char* name : names) {
    for (int attempt = 0; attempt < (cuda_dir ? 2 : 1); ++attempt) {
      const std::string path = attempt == 0 ? std::string(name) : kCudaLibDir + std::string(name);
      loaded.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (loaded.handle != nullptr) return loaded;
      const char* why = dlerror();
      if (loaded.error.empty() && why != nullptr) loaded.error = why;
    }
  }
  return loaded;
}

template <typename Fn>
Fn Symbol(void* handle, const char* name) {
  return reinterpret_cast<Fn>(dlsym(handle, name));
}

// Returns the file a symbol was loaded from, for the report's "detail".
std::string PathOf(void* symbol) {
  Dl_info info;
  if (symbol != nullptr && dladdr(symbol, &info) != 0 && info.dli_fname != nullptr) {
    return info.dli_fname;
  }
  return "";
}

LibraryVersion NotFound(std::string why) {
  LibraryVersion v;
  v.detail = std::move(why);
  return v;
}

LibraryVersion Found(std::string version, void* symbol) {
  LibraryVersion v;
  v.found = true;
  v.version = std::move(version);
  v.detail = PathOf(symbol);
  return v;
}

// CUDA encodes versions as 1000*major + 10*minor.
std::string CudaVersion(int code) {
  return std::to_string(code / 1000) + "." + std::to_string((code % 1000) / 10);
}

struct Driver {
  Loaded lib;
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*get_count)(int*) = nullptr;
  CUresult (*get_device)(CUdevice*, int) = nullptr;
  CUresult (*get_name)(char*, int, CUdevice) = nullptr;
  CUresult (*total_mem)(std::size_t*, CUdevice) = nullptr;
  CUresult (*get_attribute)(int*, int, CUdevice) = nullptr;
  CUresult (*driver_version)(int*) = nullptr;
  CUresult (*error_string)(CUresult, const char**) = nullptr;

  std::string Error(const char* call, CUresult result) const {
    const char* text = nullptr;
    if (error_string != nullptr) error_string(result, &text);
    return std::string(call) + ": " +
           (text != nullptr ? text : "CUDA error " + std::to_string(result));
  }
};

// Loads the driver and runs cuInit; returns false with `why` when there is no usable driver.
bool LoadDriver(Driver* d, std::string* why) {
  d->lib = Open({"libcuda.so.1"}, false);
  if (d->lib.handle == nullptr) {
    *why = "CUDA driver not found: " + d->lib.error;
    return false;
  }
  void* h = d->lib.handle;
  d->init = Symbol<decltype(d->init)>(h, "cuInit");
  d->get_count = Symbol<decltype(d->get_count)>(h, "cuDeviceGetCount");
  d->get_device = Symbol<decltype(d->get_device)>(h, "cuDeviceGet");
  d->get_name = Symbol<decltype(d->get_name)>(h, "cuDeviceGetName");
  d->total_mem = Symbol<decltype(d->total_mem)>(h, "cuDeviceTotalMem_v2");
  d->get_attribute = Symbol<decltype(d->get_attribute)>(h, "cuDeviceGetAttribute");
  d->driver_version = Symbol<decltype(d->driver_version)>(h, "cuDriverGetVersion");
  d->error_string = Symbol<decltype(d->error_string)>(h, "cuGetErrorString");
  if (d->init == nullptr || d->get_count == nullptr || d->get_device == nullptr ||
      d->get_name == nullptr || d->total_mem == nullptr || d->get_attribute == nullptr) {
    *why = "libcuda.so.1 lacks the driver API entry points";
    return false;
  }
  const CUresult result = d->init(0);
  if (result != 0) {
    *why = d->Error("cuInit", result);
    return false;
  }
  return true;
}

int DriverCount(const Driver& d, std::string* why) {
  int count = 0;
  const CUresult result = d.get_count(&count);
  if (result != 0) {
    *why = d.Error("cuDeviceGetCount", result);
    return 0;
  }
  if (count == 0) *why = "the CUDA driver reports no devices (check CUDA_VISIBLE_DEVICES)";
  return count;
}

LibraryVersion DriverVersion(const Driver& d) {
  if (d.lib.handle == nullptr) return NotFound("dlopen libcuda.so.1: " + d.lib.error);
  int code = 0;
  if (d.driver_version == nullptr || d.driver_version(&code) != 0 || code == 0) {
    return NotFound("cuDriverGetVersion failed");
  }
  return Found(CudaVersion(code), reinterpret_cast<void*>(d.driver_version));
}

LibraryVersion RuntimeVersion() {
  Loaded lib =
      Open({"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"}, true);
  if (lib.handle == nullptr) return NotFound("dlopen libcudart.so: " + lib.error);
  auto fn = Symbol<int (*)(int*)>(lib.handle, "cudaRuntimeGetVersion");
  int code = 0;
  if (fn == nullptr || fn(&code) != 0) return NotFound("cudaRuntimeGetVersion failed");
  return Found(CudaVersion(code), reinterpret_cast<void*>(fn));
}

LibraryVersion NcclVersion() {
  Loaded lib = Open({"libnccl.so.2", "libnccl.so"}, true);
  if (lib.handle == nullptr) return NotFound("dlopen libnccl.so.2: " + lib.error);
  auto fn = Symbol<int (*)(int*)>(lib.handle, "ncclGetVersion");
  int code = 0;
  if (fn == nullptr || fn(&code) != 0) return NotFound("ncclGetVersion failed");
  // NCCL >= 2.9 encodes 10000*major + 100*minor + patch; older 1000*major + 100*minor + patch.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? (code % 10000) / 100 : (code % 1000) / 100;
  return Found(
      std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100),
      reinterpret_cast<void*>(fn));
}

LibraryVersion CudnnVersion() {
  Loaded lib = Open({"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"}, true);
  if (lib.handle == nullptr) return NotFound("dlopen libcudnn.so.9: " + lib.error);
  auto fn = Symbol<std::size_t (*)()>(lib.handle, "cudnnGetVersion");
  if (fn == nullptr) return NotFound("cudnnGetVersion not found");
  const std::size_t code = fn();
  // cuDNN 9 encodes 10000*major + 100*minor + patch; cuDNN 8 1000*major + 100*minor + patch.
  const std::size_t major = code >= 90000 ? code / 10000 : code / 1000;
  const std::size_t minor = code >= 90000 ? (code % 10000) / 100 : (code % 1000) / 100;
  return Found(
      std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100),
      reinterpret_cast<void*>(fn));
}

LibraryVersion MpiVersion() {
  Loaded lib = Open({"libmpi.so.40", "libmpi.so.12", "libmpi.so"}, false);
  if (lib.handle == nullptr) return NotFound("dlopen libmpi.so.40: " + lib.error);
  auto fn = Symbol<int (*)(char*, int*)>(lib.handle, "MPI_Get_library_version");
  if (fn == nullptr) return NotFound("MPI_Get_library_version not found");
  std::string text(8192, '\0');  // MPI_MAX_LIBRARY_VERSION_STRING is at most a few KiB
  int length = 0;
  if (fn(text.data(), &length) != 0) return NotFound("MPI_Get_library_version failed");
  text.resize(static_cast<std::size_t>(length > 0 ? length : 0));
  const std::size_t comma = text.find(',');  // "Open MPI v4.1.4, package: ..."
  if (comma != std::string::npos) text.resize(comma);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return Found(text, reinterpret_cast<void*>(fn));
}

}  // namespace

int CountGpus(std::string* why_none) {
  Driver driver;
  std::string why;
  const int count = LoadDriver(&driver, &why) ? DriverCount(driver, &why) : 0;
  if (why_none != nullptr) *why_none = count > 0 ? "" : why;
  return count;
}

DeviceReport DetectDevices() {
  DeviceReport report;
  Driver driver;
  if (LoadDriver(&driver, &report.gpu_error)) {
    const int count = DriverCount(driver, &report.gpu_error);
    for (int i = 0; i < count; ++i) {
      CUdevice device = 0;
      GpuInfo gpu;
      gpu.index = i;
      char name[256] = {};
      std::size_t bytes = 0;
      if (driver.get_device(&device, i) != 0 || driver.get_name(name, sizeof(name), device) != 0 ||
          driver.total_mem(&bytes, device) != 0 ||
          driver.get_attribute(&gpu.cc_major, kAttrCcMajor, device) != 0 ||
          driver.get_attribute(&gpu.cc_minor, kAttrCcMinor, device) != 0 ||
          driver.get_attribute(&gpu.sm_count, kAttrSmCount, device) != 0) {
        report.gpu_error = "query GPU " + std::to_string(i) + ": CUDA driver call failed";
        continue;
      }
      gpu.name = name;
      gpu.total_mib = static_cast<std::int64_t>(bytes >> 20);
      const int cc = gpu.cc_major * 10 + gpu.cc_minor;
      gpu.fp16 = cc >= 53;
      gpu.bf16 = cc >= 80;
      report.gpus.push_back(gpu);
    }
  }
  report.cuda_driver = DriverVersion(driver);
  report.cuda_runtime = RuntimeVersion();
  report.cudnn = CudnnVersion();
  report.nccl = NcclVersion();
  report.mpi = MpiVersion();
  return report;
}

}  // namespace accel
