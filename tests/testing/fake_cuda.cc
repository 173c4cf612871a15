// fake_cuda: stand-ins for the CUDA driver, runtime, NCCL and cuDNN entry points that
// common/device_info.cc dlopens, so its decoding is checked on a machine without them
// (tests/unit/common/device_info_test.cc). Built four times, as libcuda.so.1, libcudart.so,
// libnccl.so.2 and libcudnn.so.9 in one folder the test binary's RUNPATH names.
// Two GPUs: 0 "Fake T4" (cc 7.5, 40 SMs, 15360 MiB), 1 "Fake A100" (cc 8.0, 108 SMs, 81920 MiB).
// Driver 12.4, runtime 12.1, NCCL 2.23.4, cuDNN 9.1.0; with FAKE_CUDA_OLD=1 in the environment
// NCCL 2.7.8 and cuDNN 8.9.7 in their older encodings; with FAKE_CUDA_NO_DEVICE=1 cuInit fails
// with error 100.
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace {

bool Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, "1") == 0;
}

struct Gpu {
  const char* name;
  std::size_t bytes;
  int cc_major, cc_minor, sm_count;
};
constexpr Gpu kGpus[] = {{"Fake T4", std::size_t{15360} << 20, 7, 5, 40},
                         {"Fake A100", std::size_t{81920} << 20, 8, 0, 108}};
constexpr int kNoDevice = 100;  // CUDA_ERROR_NO_DEVICE
constexpr int kInvalid = 101;   // CUDA_ERROR_INVALID_DEVICE

}  // namespace

extern "C" {

int cuInit(unsigned) { return Env("FAKE_CUDA_NO_DEVICE") ? kNoDevice : 0; }
int cuDeviceGetCount(int* count) {
  *count = 2;
  return 0;
}
int cuDeviceGet(int* device, int ordinal) {
  if (ordinal < 0 || ordinal > 1) return kInvalid;
  *device = ordinal;
  return 0;
}
int cuDeviceGetName(char* name, int length, int device) {
  if (device < 0 || device > 1 || length < 1) return kInvalid;
  std::strncpy(name, kGpus[device].name, static_cast<std::size_t>(length) - 1);
  return 0;
}
int cuDeviceTotalMem_v2(std::size_t* bytes, int device) {
  if (device < 0 || device > 1) return kInvalid;
  *bytes = kGpus[device].bytes;
  return 0;
}
int cuDeviceGetAttribute(int* value, int attribute, int device) {
  if (device < 0 || device > 1) return kInvalid;
  switch (attribute) {
    case 16:  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
      *value = kGpus[device].sm_count;
      return 0;
    case 75:  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
      *value = kGpus[device].cc_major;
      return 0;
    case 76:  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
      *value = kGpus[device].cc_minor;
      return 0;
    default:
      return 1;  // CUDA_ERROR_INVALID_VALUE
  }
}
int cuDriverGetVersion(int* version) {
  *version = 12040;
  return 0;
}
int cuGetErrorString(int error, const char** text) {
  *text = error == kNoDevice ? "no CUDA-capable device is detected" : "fake CUDA error";
  return 0;
}
int cudaRuntimeGetVersion(int* version) {
  *version = 12010;
  return 0;
}
int ncclGetVersion(int* version) {
  *version = Env("FAKE_CUDA_OLD") ? 2708 : 22304;
  return 0;
}
std::size_t cudnnGetVersion() { return Env("FAKE_CUDA_OLD") ? 8907 : 90100; }

}  // extern "C"
