// Heartbeats: an agent's heartbeats to machine 0's server during one attempt, and its judgement
// of that server.
//
// One thread that does nothing else sends a heartbeat every heartbeat_interval without waiting
// for the previous answer (a slow answer never delays the next heartbeat; at most a few are in
// flight), drains the agent's probe listener, and judges the server by join/liveness.h: silent
// (no answer to heartbeats) and its host unanswering → lost; silent but its host answers → busy,
// wait. `on_lost` runs once, on that thread, with why.
//
// Thread-safety: Stop may be called from any thread; the destructor must not be called from
// `on_lost`.
#ifndef ACCEL_RENDEZVOUS_GRPC_HEARTBEATS_H_
#define ACCEL_RENDEZVOUS_GRPC_HEARTBEATS_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "accel/rendezvous/v1/rendezvous.grpc.pb.h"
#include "rendezvous/grpc/tcp_probe.h"
#include "rendezvous/join/liveness.h"

namespace accel::rendezvous {

struct HeartbeatOptions {
  v1::Rendezvous::Stub* stub = nullptr;  // outlives the Heartbeats
  std::string token;
  v1::HeartbeatRequest request;
  LivenessOptions liveness;
  std::optional<ProbeTarget> server;        // the server's host and port; none = not probed
  const ProbeListener* listener = nullptr;  // drained every period; may be null
};

class Heartbeats {
 public:
  Heartbeats(HeartbeatOptions options, std::function<void(const std::string&)> on_lost);
  // Stops, cancels the heartbeats in flight and waits for them and the thread.
  ~Heartbeats();
  Heartbeats(const Heartbeats&) = delete;
  Heartbeats& operator=(const Heartbeats&) = delete;

  // Ends the heartbeats soon; returns at once.
  void Stop();

 private:
  struct Call;
  void Run();
  void Send() ABSL_LOCKS_EXCLUDED(mu_);
  void OnProbe(int key, absl::Time started, bool answered, absl::Time now);

  const HeartbeatOptions options_;
  const std::function<void(const std::string&)> on_lost_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Liveness server_ ABSL_GUARDED_BY(mu_);
  std::uint64_t next_call_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::uint64_t, std::shared_ptr<Call>> in_flight_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<TcpProber> prober_;  // set before the thread starts
  std::thread thread_;
};

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_HEARTBEATS_H_
