#include "common/errno_status.h"

#include <cerrno>
#include <cstring>
#include <string>

namespace accel {

absl::Status ErrnoToStatus(int err, std::string_view operation) {
  std::string message = std::string(operation) + ": " + std::strerror(err);
  return absl::ErrnoToStatus(err, message);
}

}  // namespace accel
