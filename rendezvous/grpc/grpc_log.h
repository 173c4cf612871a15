// RouteGrpcLogs: gRPC core's own log lines go through spdlog (common/logging.h) instead of
// straight to stderr, and a flood of failed TLS handshakes (strangers without the token, port
// scanners, a man in the middle retrying) is said once, not once per connection: the first one
// as a warning, then at most one summary line per defaults::kRefusedHandshakeSummaryEvery.
//
// Process-wide (gpr_set_log_function); idempotent and thread-safe. The rendezvous server and
// every client channel install it. Only a process that serves the rendezvous warns about failed
// handshakes (strangers refused by its server); in a client's the refusal is its caller's error
// (AwaitConnection names it), so gRPC's line is a debug line there.
#ifndef ACCEL_RENDEZVOUS_GRPC_GRPC_LOG_H_
#define ACCEL_RENDEZVOUS_GRPC_GRPC_LOG_H_

#include <cstdint>
#include <string_view>

namespace accel::rendezvous {

// Installs the routing (once per process). `serving`: this process runs a rendezvous server.
void RouteGrpcLogs(bool serving = false);

// Returns how many failed TLS handshakes gRPC reported in this process since it started.
std::int64_t FailedHandshakes();

// Counts (and says, as above) a handshake this process's server refused itself: a client
// certificate without this job's proof (server_proof.h).
void NoteRefusedHandshake(std::string_view why);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_GRPC_LOG_H_
