// JoinCoordinator: the rendezvous state machine of one run, without gRPC.
//
// An attempt moves joining → running → (aborted | done), or back to joining with attempt + 1 on a
// restart. Join completes every waiting machine at once when the last one arrives (or fails them
// all with the timeout report after rdzv_timeout from the first arrival, or at once with the
// reason when a machine with the job's token is refused: a config that differs, a duplicate
// machine_rank, a count that does not match). A running attempt
// watches its machines: a broken Watch stream aborts the attempt on every machine at once; a
// silent machine is probed (ProbeTargets, ProbeResult) and lost by the rules of join/liveness.h,
// so a machine that is only busy is not. This is the one place a machine is declared lost, and
// only while the attempt runs: a loss never replaces the root cause of an attempt already ended.
//
// Elastic membership (ServerOptions::elastic, join/membership.h; coordinator_elastic.cc): an
// attempt is a generation of between min_machines and num_machines machines; a lost machine
// restarts the attempt without it (drawing on the job-wide restart budget) instead of aborting,
// a machine whose rank the job's hang verdict names is evicted the same way (it reports the
// verdict, the server decides; an in-place job's machine reports its failed worker the same way
// and leaves), and a machine that joins a running attempt restarts it with the
// joiner.
//
// Time comes in as arguments (`now`) and Tick(now) fires what is due, so tests and the fuzzer
// drive it deterministically; the server calls Tick from one timer thread.
//
// Thread-safety: all methods are thread-safe. Completion callbacks and EventSink calls run on the
// calling thread after the lock is released; they must not block or call back into the
// coordinator synchronously.
#ifndef ACCEL_RENDEZVOUS_JOIN_COORDINATOR_H_
#define ACCEL_RENDEZVOUS_JOIN_COORDINATOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "accel/rendezvous/v1/rendezvous.pb.h"
#include "rendezvous/grpc/server.h"
#include "rendezvous/join/checks.h"
#include "rendezvous/join/liveness.h"
#include "rendezvous/join/membership.h"
#include "rendezvous/join/result.h"

namespace accel::rendezvous {

class JoinCoordinator {
 public:
  using Id = std::uint64_t;
  using JoinDone = std::function<void(absl::StatusOr<v1::JoinResponse>)>;

  // Receives the one terminal event of a Watch (Send), or the status ending it without one
  // (Close, on shutdown). Exactly one of the two is called, at most once.
  class EventSink {
   public:
    virtual ~EventSink() = default;
    virtual void Send(const v1::Event& event) = 0;
    virtual void Close(const absl::Status& status) = 0;
  };

  struct Hooks {
    // Host for MASTER_ADDR and the store endpoint; "" = machine 0's address.
    std::string advertise_host;
    std::function<int()> store_port;  // the server's port (known once it listens)
    // Returns a free TCP port on machine 0 for MASTER_PORT.
    std::function<absl::StatusOr<int>()> pick_master_port;
    // Called with the store namespace of an attempt that has ended by restart.
    std::function<void(const std::string&)> attempt_over;
  };

  JoinCoordinator(ServerOptions options, Hooks hooks);

  // Adds `request` (from gRPC peer `peer`) to the current attempt. `done` runs exactly once: at
  // once on a failed check, else when the attempt completes, times out, or the join is cancelled.
  // Returns the id for CancelJoin (0 when `done` already ran).
  Id Join(const v1::JoinRequest& request, std::string_view peer, absl::Time now, JoinDone done);
  // Withdraws a waiting join (its client went away); runs its `done` with CANCELLED.
  void CancelJoin(Id id);
  // Records a join refused before it reached the coordinator (`why`: a wrong or missing token),
  // named in the join timeout report. It does not end the attempt: anyone can send one. Returns
  // true when it was new (at most a few per attempt are kept).
  bool NoteRefusedJoin(const v1::JoinRequest& request, std::string_view peer, std::string_view why);

  // Registers `sink` for the attempt's terminal event (sent at once when the attempt is already
  // over). FAILED_PRECONDITION when the machine is not a member of that attempt. Watch,
  // Heartbeat and Report of the current attempt must carry the machine's secret (from its
  // JoinResponse): PERMISSION_DENIED otherwise, so no client can speak for another machine.
  absl::StatusOr<Id> Watch(const v1::WatchRequest& request, std::shared_ptr<EventSink> sink);
  // Reports that watch `id` ended without its terminal event: the machine is lost.
  void WatchBroken(Id id, absl::Time now);

  absl::Status Heartbeat(const v1::HeartbeatRequest& request, absl::Time now);
  // Returns the hosts to probe now: the running attempt's silent machines that gave a probe port.
  // ProbeTarget.key is the machine rank.
  std::vector<ProbeTarget> ProbeTargets(absl::Time now);
  // Records one probe attempt of machine `machine_rank`'s host (begun at `started`); a machine
  // that is silent and unanswered long enough is lost at once.
  void ProbeResult(int machine_rank, absl::Time started, bool answered, absl::Time now);
  // Records one control attempt (of the server's own port, probed beside the machines): when
  // answered, the machines' unanswered attempts begun no later count (join/liveness.h).
  void ControlResult(absl::Time started, bool answered, absl::Time now);
  absl::Status Report(const v1::ReportRequest& request, absl::Time now);

  // Fires the join timeout and heartbeat losses due at `now`; returns when next to call.
  absl::Time Tick(absl::Time now);

  // Waits until every machine of an ended attempt (done or aborted) has been sent its terminal
  // event — it had a watch open, or opens one now — or until `deadline`; a machine lost as the
  // abort's root cause, or one that left after reporting done, is owed nothing. Returns at once
  // while the attempt is joining or running. Returns whether nobody is owed an event. The server
  // calls it before Shutdown, so a machine whose watch arrives just after the end learns how the
  // attempt ended instead of seeing the server go away.
  bool AwaitTerminalSent(absl::Time deadline);

  // Fails waiting joins and closes watches with UNAVAILABLE; later calls fail the same way.
  void Shutdown();

 private:
  enum class Phase { kJoining, kRunning, kAborted, kDone };
  struct Pending {
    JoinedMachine machine;
    Id id = 0;
    JoinDone done;
  };
  struct Member {
    JoinedMachine machine;
    Liveness liveness;
    bool done = false;
    Id watch_id = 0;
    std::shared_ptr<EventSink> sink;
    bool told = false;   // sent the attempt's terminal event, or left after reporting done
    std::string secret;  // its JoinResponse.machine_secret; Watch, Heartbeat and Report carry it
  };
  // A completed attempt whose responses are built after the lock is released (with the machine
  // list they are O(machines^2) bytes).
  struct Completion {
    std::vector<JoinedMachine> machines;  // by machine_rank
    AttemptInfo info;
    std::vector<JoinDone> dones;       // parallel to machines
    std::vector<std::string> secrets;  // parallel to machines
  };
  struct Outbox {
    std::optional<Completion> completion;
    std::vector<std::pair<JoinDone, absl::StatusOr<v1::JoinResponse>>> joins;
    std::vector<std::pair<std::shared_ptr<EventSink>, v1::Event>> events;
    std::vector<std::pair<std::shared_ptr<EventSink>, absl::Status>> closes;
    std::vector<std::string> over;
  };

  // Checks a joining machine against the server and the machines waiting. When machine 0 joins
  // and a waiting machine's config differs from it, machine 0's is the job's: `*differing` is
  // set to that machine's rank and the status is the one that machine is refused with.
  absl::Status CheckLocked(const JoinedMachine& machine, const std::string& nonce, int* differing)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string ReferenceLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CompleteLocked(absl::Time now, Outbox& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FailPendingLocked(const absl::Status& status, Outbox& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EndLocked(Phase phase, const v1::Event& event, Outbox& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AbortLocked(const v1::RootCause& cause, Outbox& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Aborts the attempt: machine `rank` is lost, `why` ("no heartbeat for 3.0 s").
  void LostLocked(int rank, std::string_view why, Outbox& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckMemberLocked(std::string_view operation, const std::string& run_id,
                                 int machine_rank, std::int64_t attempt,
                                 const std::string& secret) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::Event TerminalEventLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool NobodyOwedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends what `out` holds, then tells hooks_.attempt_over of the attempts that ended.
  void Deliver(Outbox& out) const;

  // Elastic membership (coordinator_elastic.cc).
  bool ElasticLocked() const { return options_.elastic.enabled; }
  Forming FormingLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Completes the forming attempt when join/membership.h's rules say it is time; returns when to
  // look again (InfiniteFuture: only a join changes the answer).
  absl::Time MaybeCompleteLocked(absl::Time now, Outbox& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the running attempt with RESTART (`cause`) and forms the next, waiting for `survivors`
  // (machine ranks); `counted` draws on the restart budget; `continues`: a membership change,
  // the survivors' workers may go on (JoinResponse.continues), not a restart of every machine.
  void RestartLocked(const v1::RootCause& cause, bool counted, bool continues,
                     std::set<int> survivors, Outbox& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Machine `rank` of the running elastic attempt is lost (`why`): the survivors go on without
  // it, or the job ends (machine 0 lost, the budget spent, a machine already finished).
  void LostElasticLocked(int rank, v1::RootCause cause, std::string_view why, Outbox& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job's agreed hang verdict names `cause`.rank(), a rank of machine `rank` (its report):
  // past the restart budget the job ends; under elastic membership machine `rank` is evicted
  // (told so alone) and the others restart without it; machine 0 (it hosts the rendezvous) or a
  // fixed job restarts every machine. Counted either way.
  void HangLocked(int rank, v1::RootCause cause, Outbox& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `joiner` waits while an elastic attempt runs: the attempt restarts to let it in.
  void ScaleUpLocked(const JoinedMachine& joiner, Outbox& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records who is in the attempt just completed (for the next change's description); returns
  // that description, and in `continues` whether the previous attempt's training goes on in it.
  std::string NoteMembersLocked(const std::vector<JoinedMachine>& machines, bool* continues)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ServerOptions options_;
  const Hooks hooks_;

  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  Id next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::int64_t attempt_ ABSL_GUARDED_BY(mu_) = 0;
  Phase phase_ ABSL_GUARDED_BY(mu_) = Phase::kJoining;
  absl::Time first_join_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  std::map<int, Pending> pending_ ABSL_GUARDED_BY(mu_);  // by machine_rank
  std::vector<std::string> warnings_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> refusals_ ABSL_GUARDED_BY(mu_);  // NoteRefusedJoin, this attempt
  std::map<int, Member> members_ ABSL_GUARDED_BY(mu_);      // by machine_rank, once running
  v1::RootCause root_cause_ ABSL_GUARDED_BY(mu_);           // of the abort
  v1::RootCause restart_cause_ ABSL_GUARDED_BY(mu_);        // of the last restart
  std::int64_t restarts_ ABSL_GUARDED_BY(mu_) = 0;  // job-wide: failures and losses, not joins
  // Elastic membership: the machines the forming attempt waits for (the last one's survivors),
  // the last attempt's machines (machine_rank → host), why each machine lost from it left, and
  // when MIN machines waited (the last call runs from then).
  std::set<int> survivors_ ABSL_GUARDED_BY(mu_);
  std::map<int, std::string> previous_ ABSL_GUARDED_BY(mu_);
  std::map<int, std::string> why_left_ ABSL_GUARDED_BY(mu_);
  bool continues_ ABSL_GUARDED_BY(mu_) = false;  // how the last attempt ended (RestartLocked)
  absl::Time min_reached_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
};

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_JOIN_COORDINATOR_H_
