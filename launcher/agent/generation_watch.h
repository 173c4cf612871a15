// GenerationWatch: one attempt's watchers of the whole job, kept on the generation its workers
// are in: the status exchange (status_exchange.h: `accel-launch status`, machine 0's line) and the
// progress exchange (progress_exchange.h: hang detection across machines). Both open for the
// attempt's generation; an in-place membership change (the supervisor's RegroupHook) moves them
// to the new one: the progress exchange into the new generation's store namespace (the server
// closed the old one) with its machine count and this machine's index, the status under the new
// generation, world and ranks (the machines that left are no longer read). After such a move a
// FirstStepClock says when the workers completed their first step at the new world. Owned by the
// attempt's thread (the supervisor's); not thread-safe.
#ifndef ACCEL_LAUNCHER_AGENT_GENERATION_WATCH_H_
#define ACCEL_LAUNCHER_AGENT_GENERATION_WATCH_H_

#include <memory>

#include "absl/time/time.h"
#include "launcher/agent/first_step_clock.h"
#include "launcher/agent/plan.h"
#include "launcher/agent/rendezvous.h"
#include "launcher/agent/status_exchange.h"
#include "launcher/process/hang.h"
#include "launcher/process/supervisor.h"

namespace accel::launcher {

class GenerationWatch final : public WorkerObserver {
 public:
  // `rendezvous` null (a job without rendezvous server): nothing is watched. `launch` says where
  // the status goes (its `joined` is ignored: Open's and MoveTo's generation is used);
  // `hang_timeout` zero: no hang exchange (hang detection off, or a one-machine job).
  GenerationWatch(const AgentRendezvous* rendezvous, const StatusLaunch& launch,
                  absl::Duration hang_timeout)
      : rendezvous_(rendezvous), launch_(launch), hang_timeout_(hang_timeout) {}
  ~GenerationWatch() override { Close(); }

  // Opens both for the generation `joined` (the attempt's first).
  void Open(const RendezvousResult& joined);
  // Closes the previous generation's and opens `joined`'s; returns what the supervisor needs to
  // move the running workers into it (Regroup: their base rank, the new exchange, this observer),
  // and starts the clock of the first step at the new world.
  Regroup MoveTo(const RendezvousResult& joined);
  // Stops both: nothing is published from here on and the status line is erased.
  void Close();

  JobProgress* job() const { return job_.get(); }
  // The workers' observer: the status exchange's (and the clock's, after a move).
  WorkerObserver* observer() { return this; }

  void Started(const WorkerLaunch& worker, pid_t pid) override;
  void Exited(int rank, const ExitStatus& status) override;
  void WorkersStopping() override;

 private:
  void OpenExchanges(const RendezvousResult& joined);

  const AgentRendezvous* const rendezvous_;
  StatusLaunch launch_;
  const absl::Duration hang_timeout_;
  std::unique_ptr<JobProgress> job_;
  std::unique_ptr<StatusExchange> status_;
  std::unique_ptr<FirstStepClock> clock_;  // after a move
};

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_GENERATION_WATCH_H_
