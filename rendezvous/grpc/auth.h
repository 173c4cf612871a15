// Authentication and status conversion at the gRPC edge of the rendezvous.
//
// A call proves the job's token either by its connection (TLS with a client certificate that
// carries the token's proof, checked in the handshake, transport.h: the token is never sent) or, on
// a Unix socket, by carrying the token in metadata entry kTokenMetadataKey, which the server
// compares in constant time (TokenMatches). Anything else is answered UNAUTHENTICATED.
#ifndef ACCEL_RENDEZVOUS_GRPC_AUTH_H_
#define ACCEL_RENDEZVOUS_GRPC_AUTH_H_

#include <grpcpp/grpcpp.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace accel::rendezvous {

inline constexpr char kTokenMetadataKey[] = "x-accel-token";

// Returns whether `given` equals `expected`, in time that depends only on their lengths.
bool TokenMatches(std::string_view expected, std::string_view given);

// Returns OK when `expected` is empty, the peer's certificate was verified, or the call's token
// matches `expected`; else UNAUTHENTICATED
// naming `operation` and the peer (never the token).
absl::Status CheckToken(const grpc::CallbackServerContext& context, std::string_view expected,
                        std::string_view operation);

// Converts between absl::Status and grpc::Status (same numeric codes).
grpc::Status ToGrpc(const absl::Status& status);
// Returns "<operation>: <message>" with the gRPC status code.
absl::Status FromGrpc(const grpc::Status& status, std::string_view operation);

// Reads a whole file (TLS keys and certificates). NOT_FOUND / PERMISSION_DENIED on errors.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_AUTH_H_
