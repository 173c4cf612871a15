// MakeChannel: the gRPC channel every rendezvous client uses (token, TLS, reconnect backoff).
#ifndef ACCEL_RENDEZVOUS_GRPC_CHANNEL_H_
#define ACCEL_RENDEZVOUS_GRPC_CHANNEL_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/defaults.h"

namespace accel::rendezvous {

struct ChannelOptions {
  std::string endpoint;
  std::string tls_ca_path;  // "" = plaintext
  absl::Duration backoff_initial = absl::FromChrono(defaults::kConnectBackoffInitial);
  absl::Duration backoff_max = absl::FromChrono(defaults::kConnectBackoffMax);
};

// Returns a channel to options.endpoint. Does not connect. INVALID_ARGUMENT for an empty
// endpoint; the read error for an unreadable tls_ca_path.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const ChannelOptions& options);

// Sets `context`'s deadline, wait-for-ready and token metadata ("" = none).
void PrepareContext(grpc::ClientContext& context, const std::string& token, absl::Time deadline);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_CHANNEL_H_
