// TokenTls: TLS certificates that prove possession of the job's token without sending it.
//
// Every process of a job derives the same certificate authority from the token: HKDF-SHA256 over
// the token (fixed salt and label) gives a 32-byte seed, the seed is an Ed25519 private key, and
// the self-signed CA certificate built from it has fixed fields, so it is byte-identical
// everywhere (Ed25519 signatures are deterministic). Each process then makes one ephemeral leaf
// key and certificate signed by that CA (subject and SAN kTokenTlsName) and uses it as both TLS
// server and TLS client certificate. A peer is accepted only if its leaf chains to the CA, which
// only a holder of the token can sign; the token itself never leaves the process. The CA's private
// key is dropped once the leaf is signed.
//
// A sniffer sees TLS 1.3 (ephemeral key exchange: replayed bytes get nothing); a man in the middle
// or a server squatting the port cannot present a leaf signed by the CA, so every client refuses
// it during the handshake, before any request is sent.
//
// What an observer of the handshake can do offline is test guesses of the token against a leaf's
// signature: the token must be strong (a random one: GenerateToken).
//
// Thread-safety: TokenTlsFor is thread-safe; it makes one leaf per token per process.
#ifndef ACCEL_RENDEZVOUS_GRPC_TOKEN_TLS_H_
#define ACCEL_RENDEZVOUS_GRPC_TOKEN_TLS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace accel::rendezvous {

// The name every token leaf certifies; clients check the server's leaf for it (gRPC's target
// name override), so a leaf does not depend on how a machine is addressed.
inline constexpr char kTokenTlsName[] = "accel-rendezvous";

struct TokenTls {
  std::string ca_pem;    // the CA derived from the token (the same in every process)
  std::string cert_pem;  // this process's leaf, signed by the CA
  std::string key_pem;   // the leaf's private key (PKCS#8)
};

// Returns the CA of `token` and this process's leaf (made on the first call for a token, then
// reused). INVALID_ARGUMENT for an empty token; INTERNAL when OpenSSL fails (its error text).
absl::StatusOr<std::shared_ptr<const TokenTls>> TokenTlsFor(const std::string& token);

// Returns the CA certificate (PEM) derived from `token` alone (no leaf). For tests and tools.
absl::StatusOr<std::string> TokenCaPem(const std::string& token);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_TOKEN_TLS_H_
