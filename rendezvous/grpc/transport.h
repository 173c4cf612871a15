// How a rendezvous connection is secured: the one place that decides it, for the server and for
// every client (launchers, `status`, `preflight`, libaccel workers).
//
//   endpoint             token  tls_* files   transport
//   unix:PATH            any    ignored       kUnixSocket: no TLS (the socket lies in a private
//                                             directory, nothing on the network); each call
//                                             carries the token in metadata
//   host:port            set    none          kTokenTls: mutual TLS (transport v2, token_tls.h):
//                                             per-run random certificates; the server checks
//                                             the client's certificate proof of the token in the
//                                             handshake, the client the server's proof on every
//                                             reply (server_proof.h); the token is never sent
//   host:port            any    the user's    kUserTls: the server shows the user's certificate
//                                             (clients verify it with tls_ca_file and the host
//                                             name); with a token, the proofs as in kTokenTls
//   host:port            none   none          kPlaintext (rdzv_insecure: true): no protection
//
// A server in kTokenTls or kUserTls with a token refuses, during the TLS handshake, every client
// that cannot show a certificate with the token's proof, and sends nothing derived from the token
// before that (a probe of the port learns nothing to test guesses against). A client drops every
// reply without the server's proof (kTokenTls), or refuses during the handshake a server without
// the user's certificate (kUserTls).
#ifndef ACCEL_RENDEZVOUS_GRPC_TRANSPORT_H_
#define ACCEL_RENDEZVOUS_GRPC_TRANSPORT_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

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

// Returns how the plan line names `transport`, e.g. "mutual TLS with token proofs ...".
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

// Returns the interceptors of a client channel to `endpoint` (the server's proof on every reply;
// none without TLS or a token).
std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
ClientInterceptors(std::string_view endpoint, const TransportSecurity& security);

// Returns the credentials of a server bound to `bind_address`. The user's files' read errors;
// INTERNAL when the token's certificates cannot be made.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    std::string_view bind_address, const TransportSecurity& security);

// Returns the interceptors of a server bound to `bind_address` (its proof on every reply).
std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
ServerInterceptors(std::string_view bind_address, const TransportSecurity& security);

// What a refused connection attempt means for a client of `endpoint`, read from gRPC's last
// connection error (`grpc_message`). `certain`: one attempt settles it (a certificate that
// tls_ca_file does not verify, a server key other than the pinned one); otherwise the caller says
// it once the port is seen still listening, or the refusal has lasted (a peer that closes the
// connection may be a server shutting down: AwaitConnection, channel.h).
struct HandshakeRefusal {
  std::string explanation;  // "" = not a refusal (no server yet, a timeout, ...)
  bool certain = false;
};

// Names a refused handshake, to say "the server at X did not prove it holds this job's token:
// ..." instead of gRPC's own text:
//   - TLS client, the server's certificate not verified by tls_ca_file, or not the key pinned
//     for it (certain); the server closed the connection after the handshake, not accepting this
//     side's proof (a wrong token there or here, an older accel-launch);
//   - TLS client, the server does not speak TLS (it runs without a token, rdzv_insecure);
//   - plaintext client (no token), the server closes the connection before HTTP/2 starts: it
//     requires TLS, so the token is missing here.
HandshakeRefusal ExplainHandshakeFailure(Transport transport, std::string_view endpoint,
                                         std::string_view grpc_message);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_TRANSPORT_H_
