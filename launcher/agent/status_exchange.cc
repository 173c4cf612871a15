#include "launcher/agent/status_exchange.h"

#include <unistd.h>

#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/live_line.h"
#include "common/logging.h"
#include "common/seconds.h"
#include "launcher/status/job_file.h"
#include "launcher/status/run_dir.h"
#include "launcher/status/status_format.h"
#include "rendezvous/grpc/store_client.h"

namespace accel::launcher {
namespace {

// Keeps the job's token in the run directory for `accel-launch status` (0600, private
// directory), unless it came from ACCEL_RDZV_TOKEN (the reader brings it; it is written nowhere).
void KeepToken(const StatusLaunch& launch) {
  const char* env = std::getenv("ACCEL_RDZV_TOKEN");
  if (launch.joined->token.empty() || (env != nullptr && launch.joined->token == env)) return;
  if (absl::Status s = WriteJobToken(launch.run_dir_fd, launch.run_dir, launch.joined->token);
      !s.ok()) {
    Notice(absl::StrCat("status: `accel-launch status` will need the token given: ", s.message()));
  }
}

void WriteRunDirJobFile(const StatusLaunch& launch) {
  JobFile job;
  job.run_id = launch.plan->run_id;
  job.store_endpoint = launch.joined->store_endpoint;
  job.machine_rank = launch.plan->machine_rank;
  job.num_machines = launch.plan->num_machines;
  job.tls_ca_file = launch.config->tls_ca_file;
  job.launcher_pid = ::getpid();
  KeepToken(launch);
  if (absl::Status s = WriteJobFile(launch.run_dir_fd, launch.run_dir, job); !s.ok()) {
    Notice(absl::StrCat("status: `accel-launch status` will not find this run directory: ",
                        s.message()));
  }
}

}  // namespace

std::unique_ptr<StatusExchange> StartStatus(const StatusLaunch& launch) {
  const Config& config = *launch.config;
  if (config.status_interval_s <= 0 || launch.joined->store_endpoint.empty()) return nullptr;
  WriteRunDirJobFile(launch);
  rendezvous::StoreClientOptions store_options;
  store_options.tls_ca_path = config.tls_ca_file;
  store_options.rpc_deadline = absl::FromChrono(defaults::kProgressStoreDeadline);
  store_options.connect_timeout = store_options.rpc_deadline;
  auto store = rendezvous::ConnectStore(launch.joined->store_endpoint, launch.joined->token,
                                        StatusNamespace(launch.plan->run_id), store_options);
  if (!store.ok()) {
    Notice(absl::StrCat("status: off for this attempt: ", store.status().message()));
    return nullptr;
  }
  StatusOptions options;
  options.machine_rank = launch.plan->machine_rank;
  options.host = launch.host;
  options.run_id = launch.plan->run_id;
  options.group_rank = launch.joined->group_rank;
  options.job.num_machines = launch.joined->group_world_size;  // the generation's machines
  options.job.world_size = launch.joined->world_size;
  options.job.attempt = launch.joined->attempt;
  options.job.straggler_threshold = config.straggler_threshold;
  options.job.straggler_window_s = config.straggler_window_s;
  options.interval = absl::FromChrono(FromSeconds(config.status_interval_s));
  if (!config.log_dir.empty()) {
    options.step_times_path = absl::StrCat(launch.run_dir, "/", kStepTimesFile);
    options.step_times_mode = LogFileMode(config.log_mode);
  }
  RankTracker tracker(launch.plan->machine_rank, launch.host,
                      absl::FromChrono(FromSeconds(config.straggler_window_s)));
  return std::make_unique<StatusExchange>(*std::move(store), std::move(options),
                                          std::move(tracker));
}

StatusExchange::StatusExchange(std::unique_ptr<rendezvous::Store> store, StatusOptions options,
                               RankTracker tracker)
    : store_(std::move(store)),
      options_(std::move(options)),
      tracker_(std::move(tracker)),
      stragglers_(options_.job.straggler_threshold) {
  if (options_.machine_rank == 0 && !options_.step_times_path.empty()) {
    absl::StatusOr<StepTimesWriter> writer =
        StepTimesWriter::Open(options_.step_times_path, options_.step_times_mode);
    if (writer.ok()) {
      step_times_.emplace(*std::move(writer));
    } else {
      Notice(absl::StrCat("status: no step-time log: ", writer.status().message()));
    }
  }
  thread_ = std::thread([this] { Run(); });
}

StatusExchange::~StatusExchange() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
  if (line_shown_) ClearLiveLine();
}

void StatusExchange::Started(const WorkerLaunch& worker, pid_t pid) {
  absl::MutexLock lock(&mu_);
  tracker_.Started(worker.rank, worker.local_rank, pid, worker.files.progress_file, absl::Now());
}

void StatusExchange::Exited(int rank, const ExitStatus& status) {
  absl::MutexLock lock(&mu_);
  tracker_.Exited(rank, status.exit_code, status.signal, absl::Now());
}

void StatusExchange::Run() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stop_), options_.interval);
      if (stop_) return;
    }
    Tick(absl::Now());
  }
}

void StatusExchange::WorkersStopping() {
  absl::MutexLock lock(&mu_);
  workers_stopping_ = true;
}

bool StatusExchange::Stopping() const {
  absl::MutexLock lock(&mu_);
  return stop_;
}

void StatusExchange::Tick(absl::Time now) {
  MachineStatus mine;
  mine.machine_rank = options_.group_rank;
  mine.attempt = options_.job.attempt;
  mine.seq = ++seq_;
  {
    absl::MutexLock lock(&mu_);
    tracker_.Sample(now);
    mine.ranks = tracker_.Statuses(now);
  }
  if (options_.machine_rank == 0 && !job_published_) {
    job_published_ = PublishJobInfo(*store_, options_.job).ok();
  }
  (void)PublishMachine(*store_, mine);  // a failure skips this period; readers see the last one
  if (options_.machine_rank == 0 && !Stopping()) ShowJob(now);
}

void StatusExchange::ShowJob(absl::Time now) {
  absl::StatusOr<StoredJob> job = ReadJob(*store_, options_.run_id);
  if (!job.ok()) return;
  const double min_window = 0.9 * job->info.straggler_window_s;
  bool workers_stopping = false;
  {
    absl::MutexLock lock(&mu_);
    workers_stopping = workers_stopping_;
  }
  if (!workers_stopping) {
    for (const Straggler& s : stragglers_.Update(job->view.ranks, min_window)) {
      Notice(absl::StrCat("status: ", DescribeStraggler(s)));
    }
  }
  const std::string line = FormatStatusLine(Summarize(job->view.ranks), stragglers_.current());
  if (options_.live_line && LiveLineAvailable()) {
    ShowLiveLine(absl::StrCat(kLogPrefix, line));
    line_shown_ = true;
  } else if (now - last_plain_line_ >= options_.pipe_line_every) {
    Notice(absl::StrCat("status: ", line));
    last_plain_line_ = now;
  }
  WriteStepTimes(*job, now);
}

void StatusExchange::WriteStepTimes(const StoredJob& job, absl::Time now) {
  if (!step_times_.has_value()) return;
  std::vector<RankStatus> fresh;
  for (const RankStatus& r : job.view.ranks) {
    auto seq = job.seqs.find(r.machine_rank);
    if (seq == job.seqs.end() || seen_seqs_[r.machine_rank] == seq->second) continue;
    fresh.push_back(r);
  }
  for (const auto& [machine, seq] : job.seqs) seen_seqs_[machine] = seq;
  if (fresh.empty()) return;
  if (absl::Status s = step_times_->Append(absl::ToDoubleSeconds(now - start_), fresh); !s.ok()) {
    Notice(absl::StrCat("status: step-time log stopped: ", s.message()));
    step_times_.reset();
  }
}

}  // namespace accel::launcher
