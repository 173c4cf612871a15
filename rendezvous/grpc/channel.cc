#include "rendezvous/grpc/channel.h"

#include "common/defaults.h"
#include "common/status_macros.h"
#include "rendezvous/grpc/auth.h"

namespace accel::rendezvous {

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const ChannelOptions& options) {
  if (options.endpoint.empty()) {
    return absl::InvalidArgumentError("connect to rendezvous server: the endpoint is empty");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!options.tls_ca_path.empty()) {
    absl::StatusOr<std::string> roots = ReadFileToString(options.tls_ca_path);
    if (!roots.ok()) return Annotate(roots.status(), "connect to rendezvous server: TLS roots");
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = *roots;
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  const int initial = static_cast<int>(absl::ToInt64Milliseconds(options.backoff_initial));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, initial);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, initial);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.backoff_max)));
  args.SetMaxReceiveMessageSize(defaults::kMaxMessageBytes);
  args.SetMaxSendMessageSize(defaults::kMaxMessageBytes);
  return grpc::CreateCustomChannel(options.endpoint, credentials, args);
}

void PrepareContext(grpc::ClientContext& context, const std::string& token, absl::Time deadline) {
  context.set_deadline(absl::ToChronoTime(deadline));
  context.set_wait_for_ready(true);
  if (!token.empty()) context.AddMetadata(kTokenMetadataKey, token);
}

}  // namespace accel::rendezvous
