// The rendezvous token: a shared secret every call carries.
//
// A single-machine job makes a fresh one (GenerateToken) and passes it to its workers in
// ACCEL_RDZV_TOKEN. A multi-machine job reads one that every machine shares: from
// $ACCEL_RDZV_TOKEN or a token file (ReadTokenFile), which `accel-launch config` writes with
// WriteTokenFile; the launcher's FindRendezvousToken (launcher/agent/rendezvous_token.h) decides
// which.
#ifndef ACCEL_RENDEZVOUS_GRPC_TOKEN_H_
#define ACCEL_RENDEZVOUS_GRPC_TOKEN_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace accel::rendezvous {

// Returns a fresh token: RandomHex(32) (common/random.h), 64 lowercase hex characters.
absl::StatusOr<std::string> GenerateToken();

// Returns OK when `token` is strong enough: at least kMinTokenBits by EstimateTokenBits
// (token_strength.h; GenerateToken's tokens are 256 bits); else INVALID_ARGUMENT naming `where`
// it came from and `accel-launch token`, which writes a good one.
absl::Status CheckTokenStrength(const std::string& token, const std::string& where);

// A token read from a file.
struct TokenFile {
  std::string token;
};

// Returns the token in `path`: its first line without surrounding whitespace. Refused with
// FAILED_PRECONDITION, each saying how to fix it: a file another user owns (they know the
// token), a file group or others may read (chmod 600), a weak token (CheckTokenStrength). An
// empty file, or one that is not a regular file, is INVALID_ARGUMENT; an unreadable one keeps
// open(2)'s error (NOT_FOUND, PERMISSION_DENIED).
absl::StatusOr<TokenFile> ReadTokenFile(const std::string& path);

// Writes a fresh token to `path`, readable and writable by its owner only (0600), unless the
// file already holds a token (then it is kept, so copies on other machines stay valid, and
// made 0600 when it is ours). Returns the token. A file of another user's, or a weak token, is
// refused as by ReadTokenFile.
absl::StatusOr<std::string> WriteTokenFile(const std::string& path);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_TOKEN_H_
