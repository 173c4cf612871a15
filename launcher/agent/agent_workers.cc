// The agent's workers: each local rank's launch spec (command, environment, files), the Python
// progress module they load, and the one-process job's only worker.
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/exit_codes.h"
#include "common/logging.h"
#include "common/safe_file.h"
#include "common/seconds.h"
#include "launcher/agent/agent_internal.h"
#include "launcher/agent/python_progress.h"
#include "launcher/agent/single_worker.h"
#include "launcher/agent/worker_env.h"

namespace accel::launcher::internal {

absl::StatusOr<std::vector<WorkerLaunch>> Agent::MakeWorkers(const RendezvousResult& rdzv) {
  std::vector<WorkerLaunch> workers;
  for (int local = 0; local < plan_.nproc_per_machine; ++local) {
    WorkerLaunch w;
    w.rank = rdzv.base_rank + local;
    w.local_rank = local;
    // The worker creates its error and progress files new (O_EXCL | O_NOFOLLOW) in this
    // private directory: an old run's are removed first.
    const std::string rank_dir = absl::StrCat("/rank_", w.rank);
    absl::StatusOr<UniqueFd> dir = MakeAttemptDir(rdzv.attempt, rank_dir);
    if (!dir.ok()) return dir.status();
    const std::string path = AttemptPath(rdzv.attempt) + rank_dir;
    w.files.error_file = path + "/error.json";
    ::unlinkat(dir->get(), "error.json", 0);
    if (plan_.hang_timeout_s > 0 || (rendezvous_ != nullptr && config_.status_interval_s > 0)) {
      w.files.progress_file = path + "/progress";
      ::unlinkat(dir->get(), "progress", 0);
      w.files.python_module_dir = PythonModuleDir();
    }
    w.spec.label = absl::StrCat("worker rank=", w.rank);
    w.spec.path = command_.path;
    w.spec.argv = command_.argv;
    w.spec.env = WorkerEnv(plan_, rdzv, local, w.files, base_env_);
    if (plan_.cpu_affinity) w.spec.cpus = plan_.cpu_sets[static_cast<size_t>(local)];
    workers.push_back(std::move(w));
  }
  return workers;
}

std::string Agent::PythonModuleDir() {
  if (!python_module_dir_.has_value()) {
    python_module_dir_ = "";
    if (command_.python && config_.python_progress) {
      const std::string dir = absl::StrCat(run_dir_.path, "/python");  // private (0700)
      if (absl::Status written = WritePythonProgressModule(dir); written.ok()) {
        python_module_dir_ = dir;
      } else {
        Notice(absl::StrCat("launch: ", written.message(), "; Python workers report no progress"));
      }
    }
  }
  return *python_module_dir_;
}

int Agent::RunOnlyWorker() {
  RendezvousResult rdzv;
  rdzv.master_port = MasterPort();
  SingleWorker worker;
  // The error file lives in a private scratch directory, like every run directory's files.
  RunDirPlace place;
  place.run_id = plan_.run_id;
  absl::StatusOr<RunDir> scratch = CreateRunDir(place, ProcessEnvironment());
  if (!scratch.ok()) {
    Notice(absl::StrCat("run directory: ", scratch.status().message()));
    return kExitWorkerFailed;
  }
  worker.error_file = absl::StrCat(scratch->path, "/error.json");
  WorkerFiles files;
  files.error_file = worker.error_file;
  worker.spec.label = "worker rank=0";
  worker.spec.path = command_.path;
  worker.spec.argv = command_.argv;
  worker.spec.env = WorkerEnv(plan_, rdzv, 0, files, base_env_);
  if (plan_.cpu_affinity) worker.spec.cpus = plan_.cpu_sets.front();
  worker.machine_rank = plan_.machine_rank;
  worker.host = host_;
  worker.shutdown_grace = absl::FromChrono(FromSeconds(config_.shutdown_grace_s));
  const int code = RunSingleWorker(std::move(worker), signals_);
  RemoveTree(scratch->path);
  return code;
}

}  // namespace accel::launcher::internal
