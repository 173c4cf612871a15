// TokenTls: a process's TLS identity for the rendezvous (transport v2), and the proofs of the
// job's token bound to it. Nothing a stranger can obtain verifies a guess of the token.
//
// Each process makes one random Ed25519 key and two self-signed certificates of it:
//   - the server certificate: fixed fields, the random key; nothing derived from the token, so a
//     probe of the port (a TLS handshake, `openssl s_client -showcerts`) learns nothing to test
//     token guesses against, and two jobs with the same token show unrelated keys;
//   - the client certificate: the same key, plus a subjectAltName URI kClientProofUri + the hex
//     HMAC-SHA256, keyed from the token, of the certificate's public key. TLS 1.3 encrypts it
//     (only the server it is sent to sees it) and proves possession of the key
//     (CertificateVerify), so it cannot be replayed or relayed by whoever holds it.
// The server checks a client's proof during the handshake (a connection without one never
// reaches HTTP/2). It then proves the token in turn on every reply: metadata kServerProofKey is
// the HMAC, under a second key from the token, of the client certificate it was shown; the client
// drops a reply without it (rendezvous/grpc/server_proof.h). A man in the middle holding any
// certificate fails both ways: it cannot make a client proof, and a client's proof is bound to
// that client's key. What it can still see, having terminated TLS itself, is the first request
// of a connection (it cannot answer it): docs/design/transport-security.md.
//
// Thread-safety: TokenTlsFor is thread-safe; it makes one identity per token per process.
#ifndef ACCEL_RENDEZVOUS_GRPC_TOKEN_TLS_H_
#define ACCEL_RENDEZVOUS_GRPC_TOKEN_TLS_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace accel::rendezvous {

// The name every server certificate certifies (kUserTls servers show the user's instead).
inline constexpr char kTokenTlsName[] = "accel-rendezvous";
// The transport's version: launchers of another one refuse each other, naming both.
inline constexpr int kTransportVersion = 2;
// The prefix of the client certificate's proof URI.
inline constexpr char kClientProofUri[] = "urn:accel-launch:transport-v2:";
// The reply metadata that carries the server's proof.
inline constexpr char kServerProofKey[] = "x-accel-server-proof";

struct TokenTls {
  std::string server_cert_pem;  // nothing of the token
  std::string client_cert_pem;  // with the token's MAC over the public key
  std::string client_ca_pem;    // the public client CA it is signed by (no secret: token_tls.cc)
  std::string key_pem;          // the random key of both (PKCS#8)
  std::string mac_key;          // HKDF(token, "client certificate"), 32 bytes
  std::string proof_key;        // HKDF(token, "server proof"), 32 bytes
  std::string own_proof;        // ServerProof of client_cert_pem: what a server must answer
};

// Returns this process's identity for `token` (made on the first call for a token, then reused).
// INVALID_ARGUMENT for an empty token; INTERNAL when OpenSSL fails (its error text).
absl::StatusOr<std::shared_ptr<const TokenTls>> TokenTlsFor(const std::string& token);

// Returns OK when the client certificate `pem` carries the MAC of `tls`'s token over its public
// key; else UNAUTHENTICATED saying what is wrong (no proof at all: a stranger, or a launcher
// older than transport v2; a wrong one: another token).
absl::Status VerifyClientProof(const TokenTls& tls, std::string_view pem);

// Returns the DER of the SubjectPublicKeyInfo of the certificate `pem`, or "" when unreadable.
std::string PublicKeyDerOf(std::string_view pem);

// Returns the server's proof (hex) for the client certificate `client_pem` it was shown, or ""
// when the certificate cannot be read.
std::string ServerProof(const TokenTls& tls, std::string_view client_pem);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_TOKEN_TLS_H_
