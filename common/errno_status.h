// errno → absl::Status, with the operation and subject in the message.
#ifndef ACCEL_COMMON_ERRNO_STATUS_H_
#define ACCEL_COMMON_ERRNO_STATUS_H_

#include <string_view>

#include "absl/status/status.h"

namespace accel {

// Returns "<operation>: <strerror(err)>" with the code errno maps to (ENOENT → NOT_FOUND, …).
absl::Status ErrnoToStatus(int err, std::string_view operation);

}  // namespace accel

#endif  // ACCEL_COMMON_ERRNO_STATUS_H_
