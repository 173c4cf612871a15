// RendezvousClient: what a machine's agent uses to talk to the rendezvous server.
//
// One agent per machine: Join an attempt (blocks until every machine of the attempt has joined),
// then Watch it (a background stream delivering abort / restart / done, plus heartbeats that keep
// this machine from being declared lost), and report how the local workers ended. The client
// listens on a probe port (tcp_probe.h) that it sends in every Join, so that machine 0 can tell
// this machine busy from gone while it is silent; it judges machine 0's server the same way.
//
// The types (join/types.h) are plain structs, so callers need neither gRPC nor the generated
// protos.
// NewGrpcRendezvousClient returns the real client; FakeRendezvousClient
// (tests/testing/fake_rendezvous_client.h) is the in-process fake for unit tests.
//
// Thread-safety: all methods may be called from any thread. Join blocks (up to its deadline);
// Watch returns at once and calls `on_event` from a client-owned thread; the report calls block up
// to defaults::kRpcDeadline.
#ifndef ACCEL_RENDEZVOUS_GRPC_RENDEZVOUS_CLIENT_H_
#define ACCEL_RENDEZVOUS_GRPC_RENDEZVOUS_CLIENT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/defaults.h"
#include "rendezvous/join/liveness.h"
#include "rendezvous/join/types.h"

namespace accel::rendezvous {

using EventCallback = std::function<void(const Event&)>;

struct ClientOptions {
  std::string endpoint;     // host:port of the rendezvous server
  std::string token;        // shared secret; "" = none
  std::string tls_ca_path;  // "" = plaintext; else PEM roots used to verify the server
  int machine_rank = 0;     // used by Watch, heartbeats and reports
  std::string run_id;
  std::string hostname;
  absl::Duration rpc_deadline = absl::FromChrono(defaults::kRpcDeadline);
  // Heartbeat period, and when machine 0's server is lost (join/liveness.h): the same rules the
  // server applies to machines.
  LivenessOptions liveness;
  absl::Duration backoff_initial = absl::FromChrono(defaults::kConnectBackoffInitial);
  absl::Duration backoff_max = absl::FromChrono(defaults::kConnectBackoffMax);
};

class RendezvousClient {
 public:
  virtual ~RendezvousClient() = default;

  // Joins the current attempt and blocks until all machines have joined or `deadline`.
  // Retries with exponential backoff while the server is not reachable (machines start in any
  // order). Pass deadline = now + rdzv_timeout + defaults::kJoinGrace so the server's own timeout
  // message (which machines arrived, which are missing) arrives before the local deadline.
  // Errors: FAILED_PRECONDITION (a join-time check failed; the message names both machines),
  // DEADLINE_EXCEEDED (rdzv_timeout on the server, or the server never answered),
  // UNAUTHENTICATED (wrong token), ABORTED (the run was aborted).
  virtual absl::StatusOr<JoinResult> Join(const JoinRequest& request, absl::Time deadline) = 0;

  // Starts watching `attempt`: a background stream plus heartbeats every heartbeat_interval.
  // `on_event` is called from a client thread, once, with the terminal event. Returns at once.
  // After the terminal event (or StopWatch) a new attempt may be watched. FAILED_PRECONDITION if
  // a watch is still running, or when called from `on_event` itself (StopWatch may be).
  virtual absl::Status Watch(std::int64_t attempt, EventCallback on_event) = 0;

  // Stops the watch and heartbeats (no event is delivered after it returns). Blocks until the
  // watch thread has exited. A no-op when not watching.
  virtual void StopWatch() = 0;

  // Reports a failure on this machine: the server aborts `attempt` everywhere (the first report
  // is the root cause; later ones are ignored).
  virtual absl::Status ReportFailure(std::int64_t attempt, const RootCause& cause) = 0;

  // Reports, as ReportFailure, that this machine is being stopped (its launcher got a signal),
  // as far as the server can be reached at once: the report goes over the connection if it is
  // up, is not held for a server that is not (a scheduler signals every machine at once, and
  // machine 0's server may just have shut down), and waits at most
  // defaults::kStoppingReportDeadline. A launcher being stopped thus ends promptly.
  virtual absl::Status ReportStopping(std::int64_t attempt, const RootCause& cause) = 0;

  // Reports that this machine's workers all exited with 0. When every machine has, all watches
  // get kDone.
  virtual absl::Status ReportDone(std::int64_t attempt) = 0;

  // Asks for a new attempt after `cause` (the agent still has restarts left). Every watcher of
  // `attempt` gets kRestart with attempt + 1; agents then Join again. Idempotent per attempt.
  virtual absl::Status RequestRestart(std::int64_t attempt, const RootCause& cause) = 0;

  // Reports that the job's agreed hang verdict names `cause`.rank, a rank of this machine; the
  // server decides what follows (ReportRequest::HANG): under elastic membership this machine's
  // watch gets kAbort with `evicted` and the others kRestart without it.
  virtual absl::Status ReportHang(std::int64_t attempt, const RootCause& cause) = 0;
};

// Returns a client of the server at options.endpoint. Does not connect yet (Join does).
// INVALID_ARGUMENT for an empty endpoint or an unreadable tls_ca_path.
absl::StatusOr<std::unique_ptr<RendezvousClient>> NewGrpcRendezvousClient(
    const ClientOptions& options);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_RENDEZVOUS_CLIENT_H_
