// The rendezvous token: a shared secret every call carries.
//
// A multi-machine job reads it from rdzv_token_file or $ACCEL_RDZV_TOKEN (LoadToken); a
// single-machine job makes a fresh one (GenerateToken) and passes it to its workers in
// ACCEL_RDZV_TOKEN.
#ifndef ACCEL_RENDEZVOUS_GRPC_TOKEN_H_
#define ACCEL_RENDEZVOUS_GRPC_TOKEN_H_

#include <string>

#include "absl/status/statusor.h"

namespace accel::rendezvous {

// Returns a fresh token: RandomHex(32) (common/random.h), 64 lowercase hex characters.
absl::StatusOr<std::string> GenerateToken();

// Returns the token in `token_file` (its first line, without surrounding whitespace) when the
// path is set, else $ACCEL_RDZV_TOKEN, else "" (no token). An empty token file is
// INVALID_ARGUMENT; an unreadable one keeps open(2)'s error.
absl::StatusOr<std::string> LoadToken(const std::string& token_file);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_TOKEN_H_
