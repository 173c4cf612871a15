#include "launcher/config/config.h"

#include <cctype>
#include <cstdlib>

namespace accel::launcher {
namespace {

bool Same(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

const char* ToString(DistributedType type) {
  switch (type) {
    case DistributedType::kNo:
      return "NO";
    case DistributedType::kMultiGpu:
      return "MULTI_GPU";
    case DistributedType::kMultiCpu:
      return "MULTI_CPU";
  }
  return "NO";
}

const char* ToString(MixedPrecision precision) {
  switch (precision) {
    case MixedPrecision::kNo:
      return "no";
    case MixedPrecision::kFp16:
      return "fp16";
    case MixedPrecision::kBf16:
      return "bf16";
  }
  return "no";
}

bool ParseDistributedType(std::string_view text, DistributedType* out) {
  if (Same(text, "NO") || Same(text, "false")) {
    *out = DistributedType::kNo;
  } else if (Same(text, "MULTI_GPU")) {
    *out = DistributedType::kMultiGpu;
  } else if (Same(text, "MULTI_CPU")) {
    *out = DistributedType::kMultiCpu;
  } else {
    return false;
  }
  return true;
}

bool ParseMixedPrecision(std::string_view text, MixedPrecision* out) {
  if (Same(text, "no") || Same(text, "false")) {
    *out = MixedPrecision::kNo;
  } else if (Same(text, "fp16")) {
    *out = MixedPrecision::kFp16;
  } else if (Same(text, "bf16")) {
    *out = MixedPrecision::kBf16;
  } else {
    return false;
  }
  return true;
}

int Config::accelerate_release() const {
  const size_t dot = accelerate_version.find('.');
  if (dot == std::string::npos) return 114;
  const int major = std::atoi(accelerate_version.c_str());
  const int minor = std::atoi(accelerate_version.c_str() + dot + 1);
  return major * 100 + minor;
}

}  // namespace accel::launcher
