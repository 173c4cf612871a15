// The rendezvous server's own TCP listener: it accepts every connection itself and hands it to
// gRPC (ServerBuilder's external connection acceptor, so the server's credentials still apply),
// unless too many connections from the same source are still in their TLS handshake.
//
// Why (issue 24): each connection waiting in gRPC 1.51's TLS handshake holds ~48 KB (the TSI
// handshaker's buffers and OpenSSL's), outside gRPC's ResourceQuota, and Debian's gRPC has no cap
// on incoming connections: 5,000 idle connections from a stranger took the server from 25 MB to
// 265 MB. The gate bounds that memory to Limits::total × 48 KB without starving the job:
//
// - A connection is "pending" from its accept until it is closed or `window` has passed. gRPC
//   closes a connection that has not finished its handshake within the server's handshake
//   timeout, so with `window` a little above that timeout, an older connection that is still open
//   has authenticated (in the default token TLS a stranger cannot). Authenticated connections
//   (launchers, workers) are long-lived and few; they are not counted.
// - A connection is refused (closed at once) when its source already has `per_source` pending
//   ones, or all sources together `total`. A flood from one stranger therefore takes at most
//   per_source slots; a machine joining from another address still gets in.
// - Loopback sources are not counted: a local user has other ways to hurt the launcher, and one
//   host's many agents (tests, benchmarks) all come from 127.0.0.1.
// - A closed connection frees its slot before `window` ends: gRPC closes the descriptor it was
//   given, which the gate notices when fstat of that number fails or names another socket
//   (inode numbers of sockets are not reused while they are open).
// - The first refusal is logged (once), with a count at Stop.
//
// Thread-safety: Start and Stop are called by one owner; the gate's thread calls hand_off.
#ifndef ACCEL_RENDEZVOUS_GRPC_CONNECTION_GATE_H_
#define ACCEL_RENDEZVOUS_GRPC_CONNECTION_GATE_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/unique_fd.h"

namespace accel::rendezvous {

// The server's caps (its window is its handshake timeout + 1 s): 64 × ~48 KB from one source,
// 1024 × ~48 KB (~50 MB) from all.
struct GateLimits {
  int per_source = 64;
  int total = 1024;
  absl::Duration window = absl::Seconds(11);
  bool count_loopback = false;  // tests: loopback counted like any source
};

// Which connections are pending, per source (no I/O but fstat; owned by the gate's thread).
class PendingConnections {
 public:
  explicit PendingConnections(GateLimits limits) : limits_(limits) {}

  // Counts `fd` (just accepted from `source`) as pending and returns true, or returns false
  // (count unchanged) when its source or all sources are at their cap. Loopback sources are
  // admitted uncounted.
  bool Admit(int fd, const std::string& source, bool loopback, absl::Time now);

  int pending() const { return total_; }
  int pending_from(const std::string& source) const;

 private:
  struct Entry {
    int fd;
    dev_t dev;
    ino_t ino;
    std::string source;
    absl::Time accepted;
  };
  // Forgets connections older than the window, and (at most every 50 ms, when `closed` is set)
  // those whose descriptor was closed.
  void Expire(absl::Time now, bool closed);
  void Forget(const Entry& e);

  GateLimits limits_;
  std::deque<Entry> entries_;  // in accept order
  std::map<std::string, int> per_source_;
  int total_ = 0;
  absl::Time last_sweep_ = absl::InfinitePast();
};

class ConnectionGate {
 public:
  // Listens on host:port (port 0: a free one; an empty or wildcard host: every interface, IPv6
  // and IPv4 where the host has both). Nothing is accepted before Start.
  static absl::StatusOr<std::unique_ptr<ConnectionGate>> Listen(const std::string& host, int port,
                                                                GateLimits limits);
  ~ConnectionGate();

  int port() const { return port_; }
  // Accepts on a thread of its own; `hand_off` takes ownership of each admitted descriptor.
  void Start(std::function<void(int fd)> hand_off);
  // Stops accepting and closes the listener (idempotent).
  void Stop();
  std::int64_t refused() const { return refused_.load(); }

 private:
  ConnectionGate(UniqueFd listener, int port, GateLimits limits);
  void Run();

  UniqueFd listener_;
  UniqueFd wake_fd_;
  int port_;
  PendingConnections pending_;
  std::function<void(int)> hand_off_;
  std::thread thread_;
  std::atomic<std::int64_t> refused_{0};
};

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_CONNECTION_GATE_H_
