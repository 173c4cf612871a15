// StatusExchange: the job's status during one attempt (launcher/status). It follows this
// machine's workers as the supervisor starts and reaps them (a WorkerObserver), and on its own
// thread, every status interval, samples them (RankTracker) and publishes them to the rendezvous
// store (launcher/status/job_store.h). On machine 0 it also reads every machine's ranks and
//   - shows the status line: redrawn in place on a terminal, a plain notice every
//     defaults::kStatusPipeLineEvery otherwise;
//   - names each straggler once, with its numbers (a notice);
//   - appends the step times to <run dir>/step_times.csv when the job has a log directory.
// Store calls are bounded by the store's RPC deadline; a failing store only skips a period. The
// supervisor's calls never block on the store.
#ifndef ACCEL_LAUNCHER_AGENT_STATUS_EXCHANGE_H_
#define ACCEL_LAUNCHER_AGENT_STATUS_EXCHANGE_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/defaults.h"
#include "launcher/agent/plan.h"
#include "launcher/config/config.h"
#include "launcher/process/supervisor.h"
#include "launcher/status/job_store.h"
#include "launcher/status/job_summary.h"
#include "launcher/status/rank_tracker.h"
#include "launcher/status/step_times.h"
#include "rendezvous/store/store.h"

namespace accel::launcher {

struct StatusOptions {
  int machine_rank = 0;
  // The machine's index in the generation (GROUP_RANK; its machine rank in a fixed job): where
  // it publishes its ranks (launcher/status/job_store.h).
  int group_rank = 0;
  std::string host;
  std::string run_id;
  JobInfo job;  // machine 0 publishes it
  absl::Duration interval = absl::FromChrono(defaults::kStatusInterval);
  absl::Duration pipe_line_every = absl::FromChrono(defaults::kStatusPipeLineEvery);
  std::string step_times_path;    // machine 0: "" = no CSV
  mode_t step_times_mode = 0600;  // log_mode (launcher/status/run_dir.h)
  bool live_line = true;          // machine 0: draw on a terminal when stderr is one
};

class StatusExchange final : public WorkerObserver {
 public:
  // Starts the thread; `store` is the namespace StatusNamespace(run_id) of the rendezvous store.
  StatusExchange(std::unique_ptr<rendezvous::Store> store, StatusOptions options,
                 RankTracker tracker);
  // Stops and joins the thread (bounded by one store call) and erases the live line.
  ~StatusExchange() override;

  void Started(const WorkerLaunch& worker, pid_t pid) override;
  void Exited(int rank, const ExitStatus& status) override;
  // Names no straggler from here on: a rank handling its interrupt or dying is not slow.
  void WorkersStopping() override;

 private:
  void Run();
  bool Stopping() const;
  // One period: sample and publish; on machine 0 also read the job and show it.
  void Tick(absl::Time now);
  void ShowJob(absl::Time now);
  void WriteStepTimes(const StoredJob& job, absl::Time now);

  const std::unique_ptr<rendezvous::Store> store_;
  const StatusOptions options_;
  const absl::Time start_ = absl::Now();

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool workers_stopping_ ABSL_GUARDED_BY(mu_) = false;
  RankTracker tracker_ ABSL_GUARDED_BY(mu_);

  // The thread's own state.
  std::uint64_t seq_ = 0;
  bool job_published_ = false;
  StragglerLog stragglers_;
  std::map<int, std::uint64_t> seen_seqs_;  // machine → last seq written to the CSV
  std::optional<StepTimesWriter> step_times_;
  absl::Time last_plain_line_ = absl::InfinitePast();
  bool line_shown_ = false;

  std::thread thread_;
};

// What StartStatus needs to know about the launch.
struct StatusLaunch {
  const Config* config = nullptr;
  const LaunchPlan* plan = nullptr;
  const RendezvousResult* joined = nullptr;
  std::string host;
  std::string run_dir;  // <log_dir>/<run_id>, or the scratch directory
  int run_dir_fd = -1;  // the run directory, open (launcher/status/run_dir.h)
};

// Writes the run directory's job file (and the job's token, unless it came from ACCEL_RDZV_TOKEN:
// launcher/status/job_file.h) and starts the
// attempt's StatusExchange; null when the status is off (status_interval 0) or the store cannot
// be opened (said in a notice).
std::unique_ptr<StatusExchange> StartStatus(const StatusLaunch& launch);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_STATUS_EXCHANGE_H_
