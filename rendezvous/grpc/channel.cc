#include "rendezvous/grpc/channel.h"

#include <grpcpp/generic/generic_stub.h>

#include "absl/synchronization/notification.h"
#include "common/defaults.h"
#include "common/status_macros.h"
#include "rendezvous/grpc/auth.h"
#include "rendezvous/grpc/transport.h"

namespace accel::rendezvous {

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const ChannelOptions& options) {
  if (options.endpoint.empty()) {
    return absl::InvalidArgumentError("connect to rendezvous server: the endpoint is empty");
  }
  grpc::ChannelArguments args;
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = ClientCredentials(
      options.endpoint, TransportSecurity{options.token, options.tls_ca_path, "", ""}, args);
  if (!credentials.ok()) return Annotate(credentials.status(), "connect to rendezvous server");
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.backoff_initial)));
  // gRPC 1.51 takes GRPC_ARG_MIN_RECONNECT_BACKOFF_MS as the time a connection attempt (TCP, the
  // TLS handshake, HTTP/2's settings) may take: not the backoff's 50 ms, which a loaded machine
  // needs more than for a TLS handshake (agents then never connected).
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              static_cast<int>(
                  absl::ToInt64Milliseconds(absl::FromChrono(defaults::kConnectAttemptTimeout))));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.backoff_max)));
  args.SetMaxReceiveMessageSize(defaults::kMaxMessageBytes);
  args.SetMaxSendMessageSize(defaults::kMaxMessageBytes);
  if (options.own_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(options.endpoint, *credentials, args);
}

absl::Status AwaitConnection(const std::shared_ptr<grpc::Channel>& channel,
                             const std::string& endpoint, Transport transport,
                             absl::Time deadline) {
  while (true) {
    const grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/true);
    if (state == GRPC_CHANNEL_READY || absl::Now() >= deadline) return absl::OkStatus();
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE) {
      // Without wait_for_ready a call fails at once while there is no connection, with the last
      // connection error; a method no service has cannot do anything if one came up meanwhile.
      grpc::GenericStub stub(channel);
      grpc::ClientContext probe;
      probe.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
      probe.set_wait_for_ready(false);
      grpc::Slice empty(std::string(""));  // an empty message (an empty ByteBuffer aborts)
      grpc::ByteBuffer request(&empty, 1);
      grpc::ByteBuffer response;
      absl::Notification done;
      grpc::Status status;
      stub.UnaryCall(&probe, "/accel.rendezvous.v1.Probe/Connect", grpc::StubOptions(), &request,
                     &response, [&](grpc::Status s) {
                       status = std::move(s);
                       done.Notify();
                     });
      done.WaitForNotification();
      const std::string refused =
          ExplainHandshakeFailure(transport, endpoint, status.error_message());
      if (!refused.empty()) return absl::UnauthenticatedError(refused);
    }
    channel->WaitForStateChange(
        state, absl::ToChronoTime(std::min(deadline, absl::Now() + absl::Milliseconds(200))));
  }
}

void PrepareContext(grpc::ClientContext& context, const std::string& metadata_token,
                    absl::Time deadline) {
  context.set_deadline(absl::ToChronoTime(deadline));
  context.set_wait_for_ready(true);
  if (!metadata_token.empty()) context.AddMetadata(kTokenMetadataKey, metadata_token);
}

}  // namespace accel::rendezvous
