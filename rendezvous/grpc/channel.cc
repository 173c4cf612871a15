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

namespace {

// How long a connection refusal that one attempt does not settle (the server closes the
// connection, or does not speak TLS) must last before a client says so and stops waiting. gRPC
// retries every 50 ms at first (kConnectBackoffInitial, growing) and keeps the channel in
// TRANSIENT_FAILURE meanwhile, so this spans several attempts: a server that is shutting down
// closes one connection, then refuses the next one ("connection refused", not a refusal). Short,
// as a stranger's or `status`'s calls may have a deadline of a second.
constexpr absl::Duration kRefusalSettles = absl::Milliseconds(300);

// gRPC's last connection error on `channel`, read with a call that does not wait for a
// connection (it fails at once with that error), to a method no service has (it can do nothing
// if a connection came up meanwhile).
std::string LastConnectionError(const std::shared_ptr<grpc::Channel>& channel) {
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
  return status.error_message();
}

}  // namespace

absl::Status AwaitConnection(const std::shared_ptr<grpc::Channel>& channel,
                             const std::string& endpoint, Transport transport,
                             absl::Time deadline) {
  std::string refusal;  // the refusal that ended the attempts since `refused_since`
  absl::Time refused_since = absl::InfiniteFuture();
  while (true) {
    const grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/true);
    if (state == GRPC_CHANNEL_READY || absl::Now() >= deadline) return absl::OkStatus();
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE) {
      // gRPC keeps a channel in TRANSIENT_FAILURE while it retries, and the last error tells
      // what ended the latest attempt.
      HandshakeRefusal refused =
          ExplainHandshakeFailure(transport, endpoint, LastConnectionError(channel));
      if (refused.certain) return absl::UnauthenticatedError(refused.explanation);
      if (refused.explanation != refusal) {
        refusal = std::move(refused.explanation);
        refused_since = absl::Now();
      } else if (!refusal.empty() && absl::Now() - refused_since >= kRefusalSettles) {
        return absl::UnauthenticatedError(refusal);
      }
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
