// RendezvousServer: the gRPC rendezvous + KV store that machine 0's agent runs.
//
// Serves accel.rendezvous.v1.Rendezvous (Join, Watch, Heartbeat, reports) and
// accel.rendezvous.v1.Store (the workers' KV store) on one port, with gRPC's callback API: no
// thread is held per waiting Join or KV wait. Machine 0's agent joins like every other machine,
// through NewGrpcRendezvousClient on endpoint().
//
// Thread-safety: all methods are thread-safe. Shutdown fails every pending call with UNAVAILABLE
// and blocks until in-flight calls have finished; the destructor calls it.
#ifndef ACCEL_RENDEZVOUS_GRPC_SERVER_H_
#define ACCEL_RENDEZVOUS_GRPC_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/defaults.h"
#include "rendezvous/grpc/transport.h"
#include "rendezvous/join/liveness.h"
#include "rendezvous/join/membership.h"

namespace accel::rendezvous {

struct KvLimits {
  std::int64_t max_key_bytes = defaults::kMaxKeyBytes;
  std::int64_t max_value_bytes = defaults::kMaxValueBytes;
  std::int64_t max_total_bytes = defaults::kMaxStoreBytes;  // entries + overhead, waiters
  int max_keys_per_wait = defaults::kMaxKeysPerWait;
};

struct ServerOptions {
  // host:port (port 0 = a free port), "unix:PATH", or "unix:" = a Unix socket in a fresh private
  // directory (0700, removed at shutdown). How connections are secured: transport.h.
  std::string bind_address = "127.0.0.1:0";
  // Host put in the store endpoint and MASTER_ADDR. "" = machine 0's connecting address when the
  // bind host is a wildcard (0.0.0.0, ::), else the bind host.
  std::string advertise_host;
  int num_machines = 1;   // machines per attempt (elastic: the most, MAX)
  int num_processes = 0;  // expected total processes (world size); 0 = not checked
  std::string run_id;
  std::string token;          // "" = no authentication (single-machine jobs always set one)
  std::string tls_cert_path;  // both set = TLS with the user's certificate (transport.h)
  std::string tls_key_path;
  absl::Duration rdzv_timeout = absl::FromChrono(defaults::kRdzvTimeout);  // from first join
  // When a silent machine is probed and when it is lost (join/liveness.h).
  LivenessOptions liveness;
  bool strict = false;     // version mismatch is an error, not a warning
  ElasticOptions elastic;  // off: every attempt has num_machines machines
  KvLimits limits;
};

class RendezvousServer {
 public:
  // Binds and starts serving. INVALID_ARGUMENT for bad options, UNAVAILABLE when the address
  // cannot be bound, NOT_FOUND for unreadable TLS files.
  static absl::StatusOr<std::unique_ptr<RendezvousServer>> Start(const ServerOptions& options);

  virtual ~RendezvousServer() = default;

  // Returns the bound port (the chosen one when the options said 0).
  virtual int port() const = 0;

  // Returns "host:port" to connect to (the bind host, or 127.0.0.1 for a wildcard bind), or
  // "unix:PATH".
  virtual std::string endpoint() const = 0;

  // Returns how connections to this server are secured.
  virtual Transport transport() const = 0;

  // Waits (up to `grace`) until every machine of an attempt that has ended was sent its terminal
  // event, then fails pending calls with UNAVAILABLE, stops serving, and waits for in-flight
  // calls (bounded by `grace` again, after which they are cancelled). Idempotent.
  virtual void Shutdown(
      absl::Duration grace = absl::FromChrono(defaults::kServerShutdownGrace)) = 0;
};

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_SERVER_H_
