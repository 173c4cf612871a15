// Kernel-level reachability for loss detection (join/liveness.h says how it is used).
//
// ProbeListener: a listening TCP socket an agent opens and never serves. The kernel completes a
// connect to it (SYN → SYN-ACK) however busy the agent's process is; when the host is gone or its
// link is down, nothing answers. Its port travels in the agent's Join (JoinRequest.probe_port).
//
// TcpProber: one thread that probes a set of targets, one non-blocking connect of at most
// `attempt_timeout` after another per target (at most one attempt per attempt_timeout), and
// reports each attempt's outcome. A connect that completes is "answered"; a refusal, a timeout or
// any other error is not. The connection is reset at once (no TIME_WAIT, nothing sent).
//
// Thread-safety: TcpProber's methods are thread-safe; the callback runs on the prober's thread
// without its lock held and may call SetTargets. ProbeListener is owned by one thread.
#ifndef ACCEL_RENDEZVOUS_GRPC_TCP_PROBE_H_
#define ACCEL_RENDEZVOUS_GRPC_TCP_PROBE_H_

#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/defaults.h"
#include "common/unique_fd.h"
#include "rendezvous/join/liveness.h"  // ProbeTarget

namespace accel::rendezvous {

class ProbeListener {
 public:
  // Listens on every interface (IPv6 and IPv4 where the host has both) on a free port; O_CLOEXEC,
  // so workers never inherit it.
  static absl::StatusOr<ProbeListener> Open();

  int port() const { return port_; }
  // Accepts and closes every connection waiting, so the accept queue never fills (non-blocking).
  void Drain() const;

 private:
  ProbeListener(UniqueFd fd, int port) : fd_(std::move(fd)), port_(port) {}
  UniqueFd fd_;
  int port_ = 0;
};

class TcpProber {
 public:
  using OnResult = std::function<void(int key, absl::Time started, bool answered, absl::Time now)>;

  TcpProber(OnResult on_result,
            absl::Duration attempt_timeout = absl::FromChrono(defaults::kProbeAttemptTimeout));
  ~TcpProber();  // stops the thread; no callback runs after it returns
  TcpProber(const TcpProber&) = delete;
  TcpProber& operator=(const TcpProber&) = delete;

  // Probes exactly `targets` from now on: new ones start at once, ones left out stop (an attempt
  // in flight for them is dropped without a report).
  void SetTargets(const std::vector<ProbeTarget>& targets);

 private:
  struct Probe {
    ProbeTarget target;
    UniqueFd fd;                                // the attempt in flight, if any
    absl::Time started = absl::InfinitePast();  // of the attempt in flight or the last one
  };
  struct Outcome {
    int key;
    absl::Time started;
    bool answered;
  };
  void Run();
  // Makes probes_ match the wanted targets (the thread's own copy).
  void Reconcile();
  // Starts an attempt on `probe`; returns false (the attempt failed at once) when it could not.
  static bool Start(Probe& probe, absl::Time now);
  void Report(const std::vector<Outcome>& outcomes);

  const OnResult on_result_;
  const absl::Duration attempt_timeout_;
  UniqueFd wake_fd_;  // an eventfd: SetTargets and the destructor wake the thread
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<ProbeTarget> wanted_ ABSL_GUARDED_BY(mu_);
  std::map<int, Probe> probes_;  // by key; the thread's alone
  std::thread thread_;
};

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_TCP_PROBE_H_
