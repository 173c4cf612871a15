#include "rendezvous/grpc/transport.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/absl_view.h"
#include "common/status_macros.h"
#include "rendezvous/grpc/auth.h"
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
      return "mutual TLS (certificates derived from the token; the token is never sent)";
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
  grpc::SslCredentialsOptions ssl;
  if (!security.token.empty()) {
    absl::StatusOr<std::shared_ptr<const TokenTls>> tls = TokenTlsFor(security.token);
    if (!tls.ok()) return tls.status();
    ssl.pem_cert_chain = (*tls)->cert_pem;
    ssl.pem_private_key = (*tls)->key_pem;
    ssl.pem_root_certs = (*tls)->ca_pem;
  }
  if (transport == Transport::kUserTls) {
    absl::StatusOr<std::string> roots = ReadFileToString(security.tls_ca_path);
    if (!roots.ok()) return Annotate(roots.status(), "rendezvous TLS roots (tls_ca_file)");
    ssl.pem_root_certs = *std::move(roots);
  } else {
    args.SetSslTargetNameOverride(kTokenTlsName);
  }
  return grpc::SslCredentials(ssl);
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    std::string_view bind_address, const TransportSecurity& security) {
  const Transport transport = ServerTransport(bind_address, security);
  if (transport == Transport::kUnixSocket || transport == Transport::kPlaintext) {
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  if (!security.token.empty()) {
    absl::StatusOr<std::shared_ptr<const TokenTls>> tls = TokenTlsFor(security.token);
    if (!tls.ok()) return tls.status();
    ssl.pem_root_certs = (*tls)->ca_pem;  // the only roots a client certificate may chain to
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    ssl.pem_key_cert_pairs.push_back({(*tls)->key_pem, (*tls)->cert_pem});
  }
  if (transport == Transport::kUserTls) {
    absl::StatusOr<std::string> cert = ReadFileToString(security.tls_cert_path);
    if (!cert.ok()) return Annotate(cert.status(), "rendezvous TLS certificate (tls_cert_file)");
    absl::StatusOr<std::string> key = ReadFileToString(security.tls_key_path);
    if (!key.ok()) return Annotate(key.status(), "rendezvous TLS key (tls_key_file)");
    ssl.pem_key_cert_pairs.clear();
    ssl.pem_key_cert_pairs.push_back({*std::move(key), *std::move(cert)});
  }
  return grpc::SslServerCredentials(ssl);
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
                  " did not prove that it holds this job's token (its TLS certificate is not "
                  "signed by the token's key), so nothing was sent to it: the rendezvous token "
                  "is wrong here or on machine 0, or something else answers on that port (a man "
                  "in the middle, or a process that took the port before machine 0's launcher)"),
              true};
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
                         "token encrypts its rendezvous with certificates derived from the "
                         "token), and no token is set here: give the job's token "
                         "(ACCEL_RDZV_TOKEN or rdzv_token_file)"),
            false};
  }
  return {};
}

}  // namespace accel::rendezvous
