#include "rendezvous/grpc/channel.h"

#include <grpcpp/generic/generic_stub.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/defaults.h"
#include "common/status_macros.h"
#include "rendezvous/grpc/auth.h"
#include "rendezvous/grpc/server_proof.h"
#include "rendezvous/grpc/transport.h"

namespace accel::rendezvous {

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const ChannelOptions& options) {
  if (options.endpoint.empty()) {
    return absl::InvalidArgumentError("connect to rendezvous server: the endpoint is empty");
  }
  grpc::ChannelArguments args;
  const TransportSecurity security{options.token, options.tls_ca_path, "", ""};
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      ClientCredentials(options.endpoint, security, args);
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
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      options.endpoint, *credentials, args, ClientInterceptors(options.endpoint, security));
}

namespace {

// How long a connection refusal that one attempt does not settle may last before a client says
// so and stops waiting, when the port cannot be checked (see StillListening).
constexpr absl::Duration kRefusalSettles = absl::Milliseconds(300);

// Whether something still accepts TCP connections at `endpoint` ("host:port", "[v6]:port"),
// within a second. A server that closed a connection after (or during) the TLS handshake while
// its port still listens refused this side (a wrong token, no token, no TLS there); one that is
// shutting down has closed its listener first, so a connect is refused. gRPC 1.51 keeps the
// channel in TRANSIENT_FAILURE between attempts, so a second attempt cannot be told from the
// first: a refusal had to last 300 ms before (20 wrong-token clients took 8.4 s).
std::optional<bool> StillListening(const std::string& endpoint) {
  const std::size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos || IsUnixEndpoint(endpoint)) return std::nullopt;
  std::string host = endpoint.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string port = endpoint.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) {
    return std::nullopt;
  }
  std::optional<bool> listening;
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    if (::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
      listening = true;
    } else if (errno == EINPROGRESS) {
      pollfd waiting{fd, POLLOUT, 0};
      if (::poll(&waiting, 1, 1000) == 1) {
        int error = 0;
        socklen_t length = sizeof(error);
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
        listening = error == 0;
      }
    } else {
      listening = false;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return listening;
}

// One content-free call to kProofProbeMethod (server_proof.h): OK when the server proved the
// token (the client interceptor says so), UNIMPLEMENTED from a server that has nothing to prove
// (no token), UNAUTHENTICATED naming a server that answered without the proof; else gRPC's own
// failure (with wait_for_ready false on a channel that is not connected: its last connection
// error, at once).
grpc::Status ProbeCall(const std::shared_ptr<grpc::Channel>& channel, absl::Time deadline,
                       bool wait_for_ready) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext probe;
  probe.set_deadline(absl::ToChronoTime(deadline));
  probe.set_wait_for_ready(wait_for_ready);
  grpc::Slice empty(std::string(""));  // an empty message (an empty ByteBuffer aborts)
  grpc::ByteBuffer request(&empty, 1);
  grpc::ByteBuffer response;
  absl::Notification done;
  grpc::Status status;
  stub.UnaryCall(&probe, kProofProbeMethod, grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) {
                   status = std::move(s);
                   done.Notify();
                 });
  done.WaitForNotification();
  return status;
}

}  // namespace

absl::Status AwaitConnection(const std::shared_ptr<grpc::Channel>& channel,
                             const std::string& endpoint, Transport transport,
                             absl::Time deadline) {
  std::string refusal;  // the refusal that ended the attempts since `refused_since`
  absl::Time refused_since = absl::InfiniteFuture();
  const bool proves = transport == Transport::kTokenTls || transport == Transport::kUserTls;
  while (true) {
    const grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/true);
    if (absl::Now() >= deadline) return absl::OkStatus();
    if (state == GRPC_CHANNEL_READY) {
      if (!proves) return absl::OkStatus();
      // Before anything of the job is sent, the server proves the token on a content-free call
      // (a squatter or a man in the middle that speaks HTTP/2 learns nothing), which pins its key.
      const grpc::Status proof = ProbeCall(channel, deadline, /*wait_for_ready=*/false);
      if (proof.ok() || proof.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
        return absl::OkStatus();
      }
      if (proof.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
        return absl::UnauthenticatedError(proof.error_message());
      }
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(absl::StrCat(
            "the server at ", endpoint,
            " accepted the connection but did not prove that it holds this job's token before "
            "the deadline, so nothing of the job was sent to it"));
      }
    }
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE) {
      // gRPC keeps a channel in TRANSIENT_FAILURE while it retries, and the last error tells
      // what ended the latest attempt.
      const grpc::Status last =
          ProbeCall(channel, std::min(deadline, absl::Now() + absl::Seconds(1)),
                    /*wait_for_ready=*/false);
      HandshakeRefusal refused = ExplainHandshakeFailure(transport, endpoint, last.error_message());
      if (refused.certain) return absl::UnauthenticatedError(refused.explanation);
      if (refused.explanation != refusal) {
        refusal = std::move(refused.explanation);
        refused_since = absl::Now();
        // A close after the handshake (not a reset: the connection gate resets a source over
        // its share) or a peer without TLS, from a port that still listens, is a refusal.
        const std::string& text = last.error_message();
        const bool closed = text.find("Socket closed") != std::string::npos ||
                            text.find("wrong version number") != std::string::npos ||
                            text.find("WRONG_VERSION_NUMBER") != std::string::npos;
        if (!refusal.empty() && closed && StillListening(endpoint).value_or(false)) {
          return absl::UnauthenticatedError(refusal);
        }
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
