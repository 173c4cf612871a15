// RandomHex: random identifiers and secrets (run ids, the rendezvous token) from getrandom(2).
#ifndef ACCEL_COMMON_RANDOM_H_
#define ACCEL_COMMON_RANDOM_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace accel {

// Returns `bytes` random bytes from getrandom(2) as 2*`bytes` lowercase hex characters. Blocks
// only until the kernel's entropy pool is initialised (early boot). Errors: getrandom's errno,
// e.g. ENOSYS on a kernel older than 3.17.
absl::StatusOr<std::string> RandomHex(std::size_t bytes);

}  // namespace accel

#endif  // ACCEL_COMMON_RANDOM_H_
