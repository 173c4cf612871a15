// MakeChannel: the gRPC channel every rendezvous client uses (transport, reconnect backoff).
#ifndef ACCEL_RENDEZVOUS_GRPC_CHANNEL_H_
#define ACCEL_RENDEZVOUS_GRPC_CHANNEL_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/defaults.h"
#include "rendezvous/grpc/transport.h"

namespace accel::rendezvous {

struct ChannelOptions {
  std::string endpoint;     // host:port or unix:PATH
  std::string token;        // the job's token ("" = none); with the endpoint it decides the
                            // transport (ClientTransport, transport.h)
  std::string tls_ca_path;  // the user's CA ("" = none)
  absl::Duration backoff_initial = absl::FromChrono(defaults::kConnectBackoffInitial);
  absl::Duration backoff_max = absl::FromChrono(defaults::kConnectBackoffMax);
  // true: a connection of its own, not shared with other channels of this process (a benchmark
  // simulating many agents).
  bool own_connection = false;
};

// Returns a channel to options.endpoint, secured as ClientTransport says. Does not connect.
// INVALID_ARGUMENT for an empty endpoint; the read error for an unreadable tls_ca_path.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const ChannelOptions& options);

// Waits until `channel` is connected, or `deadline`. Returns UNAUTHENTICATED, naming what
// happened (ExplainHandshakeFailure, transport.h), when the connection is refused: at once when
// the server did not prove it holds the token (a wrong token, a man in the middle, a squatter;
// nothing was sent to it), after 300 ms when the server keeps closing a plaintext
// client's connection (it requires TLS: no token here) or does not speak TLS. Otherwise OK,
// connected or not (a call that follows waits for the rest of its own deadline, as
// wait_for_ready does).
absl::Status AwaitConnection(const std::shared_ptr<grpc::Channel>& channel,
                             const std::string& endpoint, Transport transport, absl::Time deadline);

// Sets `context`'s deadline, wait-for-ready and token metadata ("" = none; a client sends
// MetadataToken(...), which is "" whenever TLS proves the token instead).
void PrepareContext(grpc::ClientContext& context, const std::string& metadata_token,
                    absl::Time deadline);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_CHANNEL_H_
