// AgentRendezvous: the agent's side of the rendezvous.
//
// Owns the server when this machine hosts it (machine 0 of a multi-machine job binds
// main_process_ip:main_process_port when that address is its own, else 0.0.0.0 with a notice,
// and advertises main_process_ip; a single machine with more than one process serves on a Unix
// socket in a private directory) and the client every agent uses:
// Join an attempt, Watch it (server events wake the supervisor through an AbortChannel), report
// how the local workers ended. A one-process job has no AgentRendezvous at all.
//
// Thread-safety: the watch callback runs on a client thread and only touches the guarded event
// and the AbortChannel; every other method is called from the agent's thread.
#ifndef ACCEL_LAUNCHER_AGENT_RENDEZVOUS_H_
#define ACCEL_LAUNCHER_AGENT_RENDEZVOUS_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "launcher/agent/plan.h"
#include "launcher/config/config.h"
#include "launcher/process/failure_report.h"
#include "launcher/process/hang.h"
#include "launcher/process/signals.h"
#include "launcher/process/supervisor.h"
#include "rendezvous/grpc/rendezvous_client.h"
#include "rendezvous/grpc/server.h"

namespace accel::launcher {

class AgentRendezvous {
 public:
  // Returns nullptr when the plan is a single process. Starts the server here when this machine
  // hosts it (not for a dry run: then endpoint() is where it would listen), requiring `token`
  // (FindRendezvousToken's; "" = none) of every call.
  static absl::StatusOr<std::unique_ptr<AgentRendezvous>> Create(const Config& config,
                                                                 const LaunchPlan& plan,
                                                                 const std::string& host,
                                                                 const std::string& token,
                                                                 bool dry_run);

  // Wraps `client` (and `server`, may be null); used by Create and by tests with a fake client.
  AgentRendezvous(std::unique_ptr<rendezvous::RendezvousClient> client,
                  std::unique_ptr<rendezvous::RendezvousServer> server,
                  rendezvous::JoinRequest request, std::string endpoint, std::string token,
                  absl::Duration rdzv_timeout, std::string tls_ca_path = "");
  ~AgentRendezvous();

  // Returns host:port of the rendezvous server, or unix:PATH (a one-machine job).
  const std::string& endpoint() const { return endpoint_; }
  // Returns how this machine's connections to it are secured (rendezvous/grpc/transport.h).
  std::string transport() const;

  // Stops the previous watch and clears `abort`, joins the next attempt (interruptible: a signal
  // on `signals` ends the launcher with ExitCodeForSignal(N)), then watches it: abort, restart,
  // done and server-lost events call `abort`.Abort().
  absl::StatusOr<RendezvousResult> Join(const SignalFd& signals, AbortChannel& abort);
  // Stops watching the current attempt.
  void StopWatch();

  // Tells the server a local worker failed: a restart request when `restart`, else an abort.
  void ReportFailure(std::int64_t attempt, const WorkerFailure& failure, bool restart);
  // Tells the server that the job's agreed hang verdict names local worker `failure`; the server
  // decides what follows (evicted(), restart_requested(), or an abort).
  void ReportHang(std::int64_t attempt, const WorkerFailure& failure);
  // Tells the server this launcher was interrupted by `signal` from program `sender` (aborts
  // every machine), without waiting for a server that has gone (ReportStopping).
  void ReportInterrupted(std::int64_t attempt, int signal, const std::string& sender);
  // Tells the server a worker could not be started.
  void ReportSpawnFailure(std::int64_t attempt, const absl::Status& error);
  // Reports that every local worker exited 0, then waits (interruptibly) for the job's end:
  // returns kExitOk on done, kExitWorkerFailed when another machine failed,
  // kExitRendezvous when the report failed or the server was lost (common/exit_codes.h).
  int FinishDone(std::int64_t attempt, const SignalFd& signals, AbortChannel& abort);

  // Waits up to `timeout` for the current watch's terminal event; returns it (nullopt if none).
  std::optional<rendezvous::Event> AwaitEvent(absl::Duration timeout) const;
  // Returns hang detection's view of the other machines for the attempt `joined` (the attempt's
  // namespace of the rendezvous store); null when it cannot be opened (said in a notice).
  std::unique_ptr<JobProgress> OpenJobProgress(const RendezvousResult& joined,
                                               absl::Duration hang_timeout) const;

  // The terminal event of the current watch, if one arrived.
  bool restart_requested() const;
  // Whether the current watch's terminal event evicted this machine (the job goes on without it).
  bool evicted() const;
  // Returns when the event that ended the previous attempt arrived (the membership change as
  // this machine learned of it); the start of the last Join when there was none.
  absl::Time change_seen() const;
  // Returns the root cause of an abort event as a report row.
  WorkerFailure RemoteRootCause() const;
  // Returns the launcher exit code for the abort event: kExitWorkerFailed for a failed worker,
  // kExitRendezvous when the server was lost.
  int RemoteExitCode() const;

 private:
  void OnEvent(const rendezvous::Event& event, AbortChannel& abort);

  std::unique_ptr<rendezvous::RendezvousServer> server_;  // outlives nothing but the client
  std::unique_ptr<rendezvous::RendezvousClient> client_;
  rendezvous::JoinRequest request_;
  std::string endpoint_;
  std::string token_;
  absl::Duration rdzv_timeout_;
  std::string tls_ca_path_;
  bool watching_ = false;

  mutable absl::Mutex mu_;
  std::optional<rendezvous::Event> event_ ABSL_GUARDED_BY(mu_);
  absl::Time event_time_ ABSL_GUARDED_BY(mu_);
  absl::Time change_seen_ ABSL_GUARDED_BY(mu_);
};

// Returns what this machine sends to Join: its share of the plan (after device fallbacks), its
// host and address, and the fingerprint of the settings every machine must agree on.
rendezvous::JoinRequest MakeJoinRequest(const Config& config, const LaunchPlan& plan,
                                        const std::string& host);

// Returns the RootCause sent to the server for a local failure (message carries the pid, local
// rank, error-file message and last stderr line).
rendezvous::RootCause ToRootCause(const WorkerFailure& failure);
// Returns the report row for a root cause received from the server.
WorkerFailure FromRootCause(const rendezvous::RootCause& cause, absl::Time seen);

// Returns the root cause of losing the rendezvous host (event kServerLost), for machine 0:
// "machine 0 (rendezvous host) is gone: its connection closed (...)", or "... is unreachable:
// no answer to heartbeats for 3.0 s" when it stopped answering.
rendezvous::RootCause ServerLostCause(const rendezvous::Event& event);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_RENDEZVOUS_H_
