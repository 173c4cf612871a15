#include "rendezvous/grpc/transport.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/absl_view.h"
#include "common/status_macros.h"
#include "rendezvous/grpc/auth.h"
#include "rendezvous/grpc/server_proof.h"
#include "rendezvous/grpc/token_tls.h"

namespace accel::rendezvous {
namespace {

bool HasUserServerCertificate(const TransportSecurity& s) {
  return !s.tls_cert_path.empty() && !s.tls_key_path.empty();
}

}  // namespace

bool IsUnixEndpoint(std::string_view endpoint) { return endpoint.rfind("unix:", 0) == 0; }

Transport ClientTransport(std::string_view endpoint, const TransportSecurity& security) {
  if (IsUnixEndpoint(endpoint)) return Transport::kUnixSocket;
  if (!security.tls_ca_path.empty()) return Transport::kUserTls;
  return security.token.empty() ? Transport::kPlaintext : Transport::kTokenTls;
}

Transport ServerTransport(std::string_view bind_address, const TransportSecurity& security) {
  if (IsUnixEndpoint(bind_address)) return Transport::kUnixSocket;
  if (HasUserServerCertificate(security)) return Transport::kUserTls;
  return security.token.empty() ? Transport::kPlaintext : Transport::kTokenTls;
}

std::string TransportName(Transport transport) {
  switch (transport) {
    case Transport::kPlaintext:
      return "plaintext TCP (rdzv_insecure: no token, no encryption)";
    case Transport::kUnixSocket:
      return "Unix socket in a private directory (nothing on the network)";
    case Transport::kTokenTls:
      return "mutual TLS with token proofs bound to per-run keys (transport v2; the token is "
             "never sent)";
    case Transport::kUserTls:
      return "TLS with the user's certificates (tls_*), clients proved by the token";
  }
  return "unknown";
}

std::string MetadataToken(Transport transport, const std::string& token) {
  return transport == Transport::kUnixSocket || transport == Transport::kPlaintext ? token : "";
}

absl::Status CheckPrivateSocket(std::string_view endpoint) {
  const std::string path(endpoint.substr(std::string_view("unix:").size()));
  const std::size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("rendezvous socket directory ", dir));
  }
  const bool private_dir =
      S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0;
  if (private_dir && ::lstat(path.c_str(), &st) == 0 &&
      (!S_ISSOCK(st.st_mode) || st.st_uid != ::geteuid())) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "the rendezvous socket %s is not a socket of yours (owner uid %d): refusing to send the "
        "job's token to it",
        path, st.st_uid));
  }
  if (!private_dir) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "the rendezvous socket %s lies in %s, which is not a private directory of yours (owner "
        "uid %d, mode %04o; a job's socket directory is its launcher's, mode 0700): refusing to "
        "send the job's token there (another user may have taken the name after the job ended)",
        path, dir, st.st_uid, st.st_mode & 07777));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ClientCredentials(
    std::string_view endpoint, const TransportSecurity& security, grpc::ChannelArguments& args) {
  const Transport transport = ClientTransport(endpoint, security);
  if (transport == Transport::kUnixSocket && !security.token.empty()) {
    if (absl::Status mine = CheckPrivateSocket(endpoint); !mine.ok()) return mine;
  }
  if (transport == Transport::kUnixSocket || transport == Transport::kPlaintext) {
    return grpc::InsecureChannelCredentials();
  }
  // Transport v2 (token_tls.h): the client shows its certificate with the token's proof and
  // checks the server's proof on every reply (server_proof.h), not its certificate, which holds
  // nothing of the token; a kUserTls server's certificate is also verified against tls_ca_file.
  std::vector<grpc::experimental::IdentityKeyCertPair> identity;
  if (!security.token.empty()) {
    absl::StatusOr<std::shared_ptr<const TokenTls>> tls = TokenTlsFor(security.token);
    if (!tls.ok()) return tls.status();
    identity.push_back({(*tls)->key_pem, (*tls)->client_cert_pem});
  }
  std::string roots;
  if (transport == Transport::kUserTls) {
    absl::StatusOr<std::string> read = ReadFileToString(security.tls_ca_path);
    if (!read.ok()) return Annotate(read.status(), "rendezvous TLS roots (tls_ca_file)");
    roots = *std::move(read);
  }
  auto provider =
      std::make_shared<grpc::experimental::StaticDataCertificateProvider>(roots, identity);
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(provider);
  if (!identity.empty()) options.watch_identity_key_cert_pairs();
  if (transport == Transport::kUserTls) {
    options.watch_root_certs();
  } else {
    // The server's certificate holds nothing of the token: any key is taken until a server has
    // proved the token (AwaitConnection asks first), then only that one (server_proof.h).
    options.set_verify_server_certs(false);
    absl::StatusOr<std::shared_ptr<const TokenTls>> tls = TokenTlsFor(security.token);
    if (!tls.ok()) return tls.status();
    options.set_certificate_verifier(
        MakePinnedServerVerifier(*std::move(tls), std::string(endpoint)));
    options.set_check_call_host(false);
    args.SetSslTargetNameOverride(kTokenTlsName);
  }
  return grpc::experimental::TlsCredentials(options);
}

std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
ClientInterceptors(std::string_view endpoint, const TransportSecurity& security) {
  const Transport transport = ClientTransport(endpoint, security);
  if (security.token.empty() ||
      (transport != Transport::kTokenTls && transport != Transport::kUserTls)) {
    return {};
  }
  absl::StatusOr<std::shared_ptr<const TokenTls>> tls = TokenTlsFor(security.token);
  if (!tls.ok()) return {};  // ClientCredentials has already failed with the reason
  return ClientProofInterceptors(*std::move(tls), std::string(endpoint));
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    std::string_view bind_address, const TransportSecurity& security) {
  const Transport transport = ServerTransport(bind_address, security);
  if (transport == Transport::kUnixSocket || transport == Transport::kPlaintext) {
    return grpc::InsecureServerCredentials();
  }
  std::shared_ptr<const TokenTls> tls;
  if (!security.token.empty()) {
    absl::StatusOr<std::shared_ptr<const TokenTls>> made = TokenTlsFor(security.token);
    if (!made.ok()) return made.status();
    tls = *std::move(made);
  }
  grpc::experimental::IdentityKeyCertPair identity;
  if (transport == Transport::kUserTls) {
    absl::StatusOr<std::string> cert = ReadFileToString(security.tls_cert_path);
    if (!cert.ok()) return Annotate(cert.status(), "rendezvous TLS certificate (tls_cert_file)");
    absl::StatusOr<std::string> key = ReadFileToString(security.tls_key_path);
    if (!key.ok()) return Annotate(key.status(), "rendezvous TLS key (tls_key_file)");
    identity = {*std::move(key), *std::move(cert)};
  } else {
    identity = {tls->key_pem, tls->server_cert_pem};
  }
  auto provider = std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
      tls != nullptr ? tls->client_ca_pem : std::string(),
      std::vector<grpc::experimental::IdentityKeyCertPair>{identity});
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (tls != nullptr) {
    // Every client must show a certificate with the token's proof (checked here, during the
    // handshake: a stranger never reaches HTTP/2). Its chain to the public client CA is a
    // formality gRPC insists on (token_tls.cc), not what is checked.
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    options.set_certificate_verifier(MakeClientProofVerifier(tls));
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  return grpc::experimental::TlsServerCredentials(options);
}

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
ServerInterceptors(std::string_view bind_address, const TransportSecurity& security) {
  const Transport transport = ServerTransport(bind_address, security);
  if (security.token.empty() ||
      (transport != Transport::kTokenTls && transport != Transport::kUserTls)) {
    return {};
  }
  absl::StatusOr<std::shared_ptr<const TokenTls>> tls = TokenTlsFor(security.token);
  if (!tls.ok()) return {};  // ServerCredentials has already failed with the reason
  return ServerProofInterceptors(*std::move(tls));
}

HandshakeRefusal ExplainHandshakeFailure(Transport transport, std::string_view endpoint,
                                         std::string_view grpc_message) {
  const auto has = [&](std::string_view text) {
    return grpc_message.find(text) != std::string_view::npos;
  };
  if (transport == Transport::kTokenTls || transport == Transport::kUserTls) {
    if (has("certificate verify failed") || has("CERTIFICATE_VERIFY_FAILED")) {
      if (transport == Transport::kUserTls) {
        return {absl::StrCat("the server at ", Av(endpoint),
                             " showed a TLS certificate that tls_ca_file does not verify for "
                             "that host, so nothing was sent to it"),
                true};
      }
      return {absl::StrCat(
                  "the server at ", Av(endpoint),
                  " did not prove that it holds this job's token (the TLS handshake failed a "
                  "certificate check), so nothing was sent to it: the rendezvous token "
                  "is wrong here or on machine 0, or something else answers on that port (a man "
                  "in the middle, or a process that took the port before machine 0's launcher)"),
              true};
    }
    if (has(kPinMismatch)) {
      return {absl::StrCat("the server at ", Av(endpoint),
                           " did not prove that it holds this job's token: it showed another TLS "
                           "key than the server that proved the token to this process before, so "
                           "nothing was sent to it (a man in the middle, or a process that took "
                           "the port after machine 0's launcher ended)"),
              true};
    }
    if (has("Socket closed") || has("Connection reset")) {
      // The server closes a connection whose client certificate lacks its token's proof right
      // after the TLS handshake (TLS 1.3 ends the client's part first). A server shutting down
      // closes connections too: said only once it lasts (not certain).
      return {absl::StrCat("the server at ", Av(endpoint),
                           " did not prove that it holds this job's token: it closed the "
                           "connection at the TLS handshake, not accepting this side's proof, so "
                           "nothing was sent to it: the rendezvous token is wrong here or on "
                           "machine 0, something else answers on that port (a man in the "
                           "middle, or a process that took the port before machine 0's "
                           "launcher), or machine 0 runs an accel-launch older than transport v",
                           kTransportVersion),
              false};
    }
    if (has("wrong version number") || has("WRONG_VERSION_NUMBER")) {
      return {absl::StrCat("the server at ", Av(endpoint),
                           " does not speak TLS, so nothing was sent to it: it runs without a "
                           "token (rdzv_insecure) while this side has one, or it is not this "
                           "job's rendezvous"),
              false};
    }
    return {};
  }
  if (transport == Transport::kPlaintext && (has("Socket closed") || has("Connection reset"))) {
    return {absl::StrCat("the server at ", Av(endpoint),
                         " closed the connection before any call: it requires TLS (a job with a "
                         "token encrypts its rendezvous, proving the token in TLS), and no token "
                         "is set here: give the job's token "
                         "(ACCEL_RDZV_TOKEN or rdzv_token_file)"),
            false};
  }
  return {};
}

}  // namespace accel::rendezvous
