// ProgressExchange: hang detection's view of the other machines (JobProgress), over the
// rendezvous store, for one attempt of a multi-machine job. Keys in the attempt's namespace:
//   accel-launch/activity        a counter that a machine bumps whenever one of its ranks was
//                                active (by 1) or advanced (by kAdvancedUnit, 2^32): how long
//                                its low 32 bits stood still is how long the job was idle, how
//                                long the bits above stood still how long it was stalled
//   accel-launch/progress/<m>    machine m's ranks (EncodeSnapshots), rewritten each period
//   accel-launch/hang-reports    how many machines wrote their hang report
//   accel-launch/hang-report/<m> machine m's ranks as it sampled them once it learned that the
//                                job is hung (its own proposal, or the counter above), written once
//   accel-launch/hang-verdict    the job's verdict, set only while absent
// The job's verdict (issue 25): a machine that proposes one writes its report and waits until
// every machine's report is in (or options.report_wait ran out, for a machine that does not
// answer), then decides with DecideJobVerdict over the reports (the last progress read stands in
// for a missing one; without every report only a stopped rank settles it until another
// hang_timeout has passed: docs/design/hang-verdicts.md) and stores the result if none is stored
// yet; every machine adopts the stored
// verdict, also one that never proposed (Settled, which HangWatch acts on). A machine learns of
// the hang from the report counter, read every period, and reports a sample of its ranks taken
// after that, so the decision rests on each machine's own fresh observation (a stopped process is
// seen where it runs), not on another machine's copy from before a stall of its launcher. The
// proposal itself gives only the job's idle time and whether it was a busy stall.
// One thread makes every store call, each period (defaults::kProgressPublishInterval), and every
// kCollectPoll (50 ms) during a hang round until the verdict is known (a proposal: the report
// counter and the verdict, plus one per new report; another machine: the verdict); the other
// machines' ranks are read only once the job has been idle or stalled for half the hang timeout,
// so a healthy job costs each machine four small calls per period.
// The supervisor's calls never block. A failing store reads as "the job is active".
#ifndef ACCEL_LAUNCHER_AGENT_PROGRESS_EXCHANGE_H_
#define ACCEL_LAUNCHER_AGENT_PROGRESS_EXCHANGE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/defaults.h"
#include "launcher/process/hang.h"
#include "rendezvous/store/store.h"

namespace accel::launcher {

struct ExchangeOptions {
  int machine_rank = 0;
  int num_machines = 1;
  absl::Duration hang_timeout = absl::FromChrono(defaults::kHangTimeout);
  absl::Duration interval = absl::FromChrono(defaults::kProgressPublishInterval);
  // How long a proposal waits for every machine's hang report before deciding without the
  // missing ones (below defaults::kHangVerdictWait, after which HangWatch acts on its own).
  absl::Duration report_wait = 4 * absl::FromChrono(defaults::kProgressPublishInterval);
};

class ProgressExchange final : public JobProgress {
 public:
  // Starts the thread; `store` is the attempt's namespace of the rendezvous store.
  ProgressExchange(std::unique_ptr<rendezvous::Store> store, ExchangeOptions options);
  // Stops and joins the thread (bounded by one store call: give `store` a short RPC deadline).
  ~ProgressExchange() override;

  void Publish(std::vector<RankSnapshot> ranks, absl::Duration idle_for, absl::Duration stalled_for,
               absl::Time now) override;
  absl::Duration JobIdleFor(absl::Time now) const override;
  absl::Duration JobStalledFor(absl::Time now) const override;
  std::vector<RankSnapshot> OtherRanks(absl::Time now) const override;
  void Propose(const HangVerdict& verdict) override;
  std::optional<HangVerdict> Settled() const override;

 private:
  struct Remote {
    std::vector<RankSnapshot> ranks;
    absl::Time read;
  };
  void Run();
  // One period's store calls (each bounded by the store's RPC deadline; a stop ends them early).
  void Exchange();
  bool Stopping() const;
  void PublishOwn();
  void ReadActivity();
  void ReadOthers();
  // Writes this machine's hang report (once) when it proposed or another machine reported, from
  // a sample no older than report_from_ (else it waits for the supervisor's next one).
  void Report();
  // Returns the other machines' ranks as last read, their idle times brought forward to `now`.
  std::vector<RankSnapshot> OthersLocked(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads the reports not read yet; decides and stores the job's verdict once all are in or the
  // report wait ran out.
  void SettleVerdict();
  // Reads the job's verdict, once stored (a machine that reported without proposing).
  void ReadVerdict();

  const std::unique_ptr<rendezvous::Store> store_;
  const ExchangeOptions options_;

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  // From the supervisor.
  std::vector<RankSnapshot> own_ ABSL_GUARDED_BY(mu_);
  absl::Time own_active_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();    // last local activity
  absl::Time own_advanced_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();  // last local advance
  absl::Time own_sampled_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();   // when own_ was sampled
  std::optional<HangVerdict> proposal_ ABSL_GUARDED_BY(mu_);
  bool proposal_new_ ABSL_GUARDED_BY(mu_) = false;  // the thread has not seen it yet
  // The earliest sample a hang report may carry: the one the proposal was made from, or one
  // taken after the report counter was seen (not a copy from before a stall of this launcher).
  absl::Time report_from_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  // From the store.
  absl::Time activity_changed_ ABSL_GUARDED_BY(mu_);  // when the counter's activity moved
  absl::Time advanced_changed_ ABSL_GUARDED_BY(mu_);  // when its advances moved
  absl::Time read_ok_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::map<int, Remote> others_ ABSL_GUARDED_BY(mu_);
  std::optional<HangVerdict> settled_ ABSL_GUARDED_BY(mu_);

  // The thread's own state.
  std::optional<std::int64_t> activity_seen_;
  absl::Time activity_added_ = absl::InfinitePast();  // own_active_ when last counted
  absl::Time advanced_added_ = absl::InfinitePast();  // own_advanced_ when last counted
  bool round_seen_ = false;  // this machine proposed, or another machine's report was counted
  bool reported_ = false;    // this machine's hang report is written
  absl::Time proposed_at_ = absl::InfiniteFuture();   // when the thread first saw the proposal
  std::map<int, std::vector<RankSnapshot>> reports_;  // machine → its hang report

  std::thread thread_;
};

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_PROGRESS_EXCHANGE_H_
