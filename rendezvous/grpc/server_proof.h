// The gRPC side of transport v2's token proofs (token_tls.h):
//   - ClientProofVerifier: the server's check, during the TLS handshake, of a client
//     certificate's proof (a connection without a valid one is closed before HTTP/2);
//   - the server interceptor: every reply (initial and trailing metadata) carries the server's
//     proof for the client certificate of its connection;
//   - the client interceptor: a reply without the right proof is dropped (the call is cancelled
//     and ends UNAUTHENTICATED, saying why): a man in the middle, a process that took machine 0's
//     port, or a wrong token on machine 0 cannot answer a client; a reply that does carry it pins
//     the server's key for that endpoint in this process;
//   - the pinned-server check: a client's later handshakes with that endpoint accept only the
//     pinned key, so once a server has proved the token nobody else can take its place.
// A client asks for the proof with a content-free call (kProofProbeMethod, AwaitConnection) before
// its first request, so a squatter or a man in the middle that speaks HTTP/2 learns nothing of
// the job: not the run id, the host names or a store key.
#ifndef ACCEL_RENDEZVOUS_GRPC_SERVER_PROOF_H_
#define ACCEL_RENDEZVOUS_GRPC_SERVER_PROOF_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/support/client_interceptor.h>
#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <string>
#include <vector>

#include "rendezvous/grpc/token_tls.h"

namespace accel::rendezvous {

// The content-free call that asks a server for its proof: no service has it, so a server answers
// UNIMPLEMENTED, with its proof; the client interceptor turns that into OK when the proof is
// right, and any other answer from the server into UNAUTHENTICATED.
inline constexpr char kProofProbeMethod[] = "/accel.Proof/Ask";

// Returns the server's handshake check of client proofs under `tls`'s token.
std::shared_ptr<grpc::experimental::CertificateVerifier> MakeClientProofVerifier(
    std::shared_ptr<const TokenTls> tls);

// Returns the interceptor creators a server of `tls`'s token adds (ServerBuilder).
std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
ServerProofInterceptors(std::shared_ptr<const TokenTls> tls);

// Returns the interceptor creators of a client channel to `endpoint` under `tls`'s token.
std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
ClientProofInterceptors(std::shared_ptr<const TokenTls> tls, const std::string& endpoint);

// Returns a client's check, during each TLS handshake with `endpoint`, that the server shows the
// key pinned for it (none pinned yet: any key; the proof is asked for before anything is sent).
std::shared_ptr<grpc::experimental::CertificateVerifier> MakePinnedServerVerifier(
    std::shared_ptr<const TokenTls> tls, const std::string& endpoint);

// Whether a server at `endpoint` has proved `tls`'s token to this process (its key is pinned).
bool ServerProved(const TokenTls& tls, const std::string& endpoint);

// The start of a client's refusal of a server whose key is not the pinned one.
inline constexpr char kPinMismatch[] = "the server showed another key than the pinned one";

// What a client says of a reply without the server's proof.
std::string UnprovenReplyMessage(const std::string& endpoint);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_SERVER_PROOF_H_
