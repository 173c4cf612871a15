// ConnectStore: the worker side of the KV store served by RendezvousServer.
//
// Workers read ACCEL_STORE_ENDPOINT and ACCEL_RDZV_TOKEN from their environment and use the
// namespace of their attempt (StoreNamespace(TORCHELASTIC_RUN_ID, ACCEL_STORE_ATTEMPT): every
// membership change is a new attempt), so keys of different runs and generations never collide.
//
// The returned Store is thread-safe. Each call is one RPC with deadline
// max(timeout, 0) + options' rpc_deadline; server-side waits end exactly at `timeout` with
// DEADLINE_EXCEEDED naming the missing keys. Errors from the server keep their code:
// INVALID_ARGUMENT (key or value too large, empty key), RESOURCE_EXHAUSTED (store full),
// UNAUTHENTICATED (wrong token; over TCP a refused TLS handshake, named by
// ExplainHandshakeFailure), UNAVAILABLE (server gone).
#ifndef ACCEL_RENDEZVOUS_GRPC_STORE_CLIENT_H_
#define ACCEL_RENDEZVOUS_GRPC_STORE_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/defaults.h"
#include "rendezvous/store/store.h"

namespace accel::rendezvous {

struct StoreClientOptions {
  std::string tls_ca_path;  // "" = plaintext
  absl::Duration rpc_deadline = absl::FromChrono(defaults::kRpcDeadline);
  // How long the first call waits for the server (retrying while it cannot be reached; a refused
  // TLS handshake ends the wait at once).
  absl::Duration connect_timeout = absl::FromChrono(defaults::kStoreConnectTimeout);
  // false: a call fails at once (UNAVAILABLE) while the server cannot be reached, instead of
  // waiting for it up to its deadline (for a client that must not be held up by a dead server).
  bool wait_for_ready = true;
};

// Returns a Store backed by the server at `endpoint` ("host:port"), sending `token` with every
// call and prefixing every key with `name_space`. Does not connect yet.
// INVALID_ARGUMENT for an empty endpoint or namespace.
absl::StatusOr<std::unique_ptr<Store>> ConnectStore(const std::string& endpoint,
                                                    const std::string& token,
                                                    const std::string& name_space,
                                                    const StoreClientOptions& options = {});

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_STORE_CLIENT_H_
