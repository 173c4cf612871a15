// The rendezvous token: a shared secret every call carries.
//
// A single-machine job makes a fresh one (GenerateToken) and passes it to its workers in
// ACCEL_RDZV_TOKEN. A multi-machine job reads one that every machine shares: from
// $ACCEL_RDZV_TOKEN or a token file (ReadTokenFile), which `accel-launch config` writes with
// WriteTokenFile; the launcher's FindRendezvousToken (launcher/agent/rendezvous_token.h) decides
// which.
#ifndef ACCEL_RENDEZVOUS_GRPC_TOKEN_H_
#define ACCEL_RENDEZVOUS_GRPC_TOKEN_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace accel::rendezvous {

// Returns a fresh token: RandomHex(32) (common/random.h), 64 lowercase hex characters.
absl::StatusOr<std::string> GenerateToken();

// A token read from a file, and what was wrong with the file short of refusing it.
struct TokenFile {
  std::string token;
  std::string warning;  // "" or why the file is unsafe (group/other may read it)
};

// Returns the token in `path`: its first line without surrounding whitespace. A file that group
// or others may read is FAILED_PRECONDITION when `strict`, else comes with a warning; both say
// how to fix it (chmod 600). An empty file, or one that is not a regular file, is
// INVALID_ARGUMENT; an unreadable one keeps open(2)'s error (NOT_FOUND, PERMISSION_DENIED).
absl::StatusOr<TokenFile> ReadTokenFile(const std::string& path, bool strict);

// Writes a fresh token to `path`, readable and writable by its owner only (0600), unless the
// file already holds a token (then it is kept, so copies on other machines stay valid, and
// made 0600). Returns the token.
absl::StatusOr<std::string> WriteTokenFile(const std::string& path);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_TOKEN_H_
