// Early-return helpers for absl::Status / absl::StatusOr<T>.
#ifndef ACCEL_COMMON_STATUS_MACROS_H_
#define ACCEL_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define ACCEL_STATUS_CONCAT_INNER_(a, b) a##b
#define ACCEL_STATUS_CONCAT_(a, b) ACCEL_STATUS_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define ACCEL_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::absl::Status accel_status_ = (expr);         \
    if (!accel_status_.ok()) return accel_status_; \
  } while (false)

// ACCEL_ASSIGN_OR_RETURN(auto x, MakeX()) declares x from a StatusOr or returns its error.
#define ACCEL_ASSIGN_OR_RETURN(lhs, expr) \
  ACCEL_ASSIGN_OR_RETURN_IMPL_(ACCEL_STATUS_CONCAT_(accel_statusor_, __LINE__), lhs, expr)
#define ACCEL_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

namespace accel {

// Returns `status` with "<context>: " prefixed to its message.
inline absl::Status Annotate(const absl::Status& status, std::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), std::string(context) + ": " + std::string(status.message()));
}

}  // namespace accel

#endif  // ACCEL_COMMON_STATUS_MACROS_H_
