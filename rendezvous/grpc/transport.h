// How a rendezvous connection is secured: the one place that decides it, for the server and for
// every client (launchers, `status`, `preflight`, libaccel workers).
//
//   endpoint             token  tls_* files   transport
//   unix:PATH            any    ignored       kUnixSocket: no TLS (the socket lies in a private
//                                             directory, nothing on the network); each call
//                                             carries the token in metadata
//   host:port            set    none          kTokenTls: mutual TLS, both sides' certificates
//                                             signed by the CA derived from the token
//                                             (token_tls.h); the token is never sent
//   host:port            any    the user's    kUserTls: the server shows the user's certificate
//                                             (clients verify it with tls_ca_file and the host
//                                             name); clients show a token leaf that the server
//                                             requires when there is a token; never sent either
//   host:port            none   none          kPlaintext (rdzv_insecure: true): no protection
//
// A server in kTokenTls or kUserTls with a token refuses, during the TLS handshake, every client
// that cannot show a leaf signed by the token's CA; a client refuses, during the handshake, a
// server that cannot show one (kTokenTls) or the user's certificate (kUserTls). Nothing of the
// job is sent before both are proved.
#ifndef ACCEL_RENDEZVOUS_GRPC_TRANSPORT_H_
#define ACCEL_RENDEZVOUS_GRPC_TRANSPORT_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace accel::rendezvous {

enum class Transport { kPlaintext, kUnixSocket, kTokenTls, kUserTls };

// What a process knows that secures its connections.
struct TransportSecurity {
  std::string token;          // the job's token; "" = none (rdzv_insecure)
  std::string tls_ca_path;    // clients: PEM roots that verify a user-certified server
  std::string tls_cert_path;  // server: the user's certificate chain (PEM)
  std::string tls_key_path;   // server: its private key (PEM)
};

// Returns whether `endpoint` names a Unix domain socket ("unix:PATH").
bool IsUnixEndpoint(std::string_view endpoint);

// Returns the transport of a client of `endpoint` / a server bound to `bind_address`.
Transport ClientTransport(std::string_view endpoint, const TransportSecurity& security);
Transport ServerTransport(std::string_view bind_address, const TransportSecurity& security);

// Returns how the plan line names `transport`, e.g. "mutual TLS (certificates from the token)".
std::string TransportName(Transport transport);

// Returns the token to send in each call's metadata: the token for kUnixSocket and kPlaintext,
// "" otherwise (TLS with a certificate from the token proves it instead).
std::string MetadataToken(Transport transport, const std::string& token);

// Returns OK when the Unix socket of `endpoint` ("unix:PATH") lies in a directory of this user's
// that nobody else may enter, and is (if it exists yet) a socket of this user's: a client sends
// the token in each call's metadata there, so a name another user took after the job ended (pid
// reuse, a stale job file) must not receive it. PERMISSION_DENIED saying why, else the lstat
// error.
absl::Status CheckPrivateSocket(std::string_view endpoint);

// Returns the credentials of a client channel to `endpoint`, adding to `args` what they need
// (the target name every token leaf certifies). The user's CA file's read error; INTERNAL when
// the token's certificates cannot be made; CheckPrivateSocket's refusal for a Unix socket.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ClientCredentials(
    std::string_view endpoint, const TransportSecurity& security, grpc::ChannelArguments& args);

// Returns the credentials of a server bound to `bind_address`. The user's files' read errors;
// INTERNAL when the token's certificates cannot be made.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    std::string_view bind_address, const TransportSecurity& security);

// What a refused connection attempt means for a client of `endpoint`, read from gRPC's last
// connection error (`grpc_message`). `certain`: one attempt settles it (a certificate that the
// token's CA or tls_ca_file does not verify); otherwise it is said only once two attempts in a
// row end the same way (a peer that closes the connection may be a server shutting down).
struct HandshakeRefusal {
  std::string explanation;  // "" = not a refusal (no server yet, a timeout, ...)
  bool certain = false;
};

// Names a refused handshake, to say "the server at X did not prove it holds this job's token:
// ..." instead of gRPC's own text:
//   - TLS client, the server's certificate not verified: a wrong token, a man in the middle, a
//     squatter (certain);
//   - TLS client, the server does not speak TLS (it runs without a token, rdzv_insecure);
//   - plaintext client (no token), the server closes the connection before HTTP/2 starts: it
//     requires TLS, so the token is missing here.
HandshakeRefusal ExplainHandshakeFailure(Transport transport, std::string_view endpoint,
                                         std::string_view grpc_message);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_TRANSPORT_H_
