#include "launcher/commands/status_command.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/env_contract.h"
#include "common/env_reader.h"
#include "common/exit_codes.h"
#include "launcher/status/job_store.h"
#include "launcher/status/job_summary.h"
#include "launcher/status/run_dir.h"
#include "launcher/status/status_format.h"
#include "rendezvous/grpc/store_client.h"
#include "rendezvous/grpc/token.h"

namespace accel::launcher {
namespace {

std::string SearchedPlaces(const StatusRequest& request) {
  if (!request.config.log_dir.empty()) return request.config.log_dir;
  return absl::StrJoin(ScratchRoots(request.env), " and ");
}

// The job files of `run_id` ("*" = any run) that are the caller's and whose launcher is the
// caller's running process. `refused` collects why the others were not used (another user's
// directory or file, a symlink; for a named run id also a launcher that is not running).
std::vector<JobFile> LiveJobs(const StatusRequest& request, const std::string& run_id,
                              std::vector<std::string>* refused) {
  std::vector<JobFile> live;
  for (const std::string& dir : RunDirCandidates(request.config.log_dir, run_id, request.env)) {
    absl::StatusOr<JobFile> job = ReadJobFile(dir);
    if (absl::IsNotFound(job.status())) continue;
    if (!job.ok()) {
      refused->push_back(std::string(job.status().message()));
    } else if (!OwnLauncherRunning(job->launcher_pid)) {
      if (run_id != "*") {  // a job that ended: worth saying only when asked for by its id
        refused->push_back(absl::StrCat(dir, ": its launcher (pid ", job->launcher_pid,
                                        ") is not a running process of yours"));
      }
    } else {
      live.push_back(*std::move(job));
    }
  }
  return live;
}

std::string Ignored(const std::vector<std::string>& refused) {
  return refused.empty() ? "" : absl::StrCat(" (ignored: ", absl::StrJoin(refused, "; "), ")");
}

absl::StatusOr<JobFile> FindLiveJob(const StatusRequest& request) {
  std::vector<std::string> refused;
  std::vector<JobFile> live = LiveJobs(request, "*", &refused);
  if (live.size() == 1) return live.front();
  if (live.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no running job of yours found under ", SearchedPlaces(request),
                     Ignored(refused), "; name one: accel-launch status RUN_DIR, or --run_id ID"));
  }
  std::vector<std::string> where;
  for (const JobFile& job : live) where.push_back(job.run_dir);
  return absl::InvalidArgumentError(
      absl::StrCat(live.size(), " running jobs: ", absl::StrJoin(where, ", "),
                   "; name one: accel-launch status RUN_DIR, or --run_id ID"));
}

}  // namespace

absl::StatusOr<JobFile> FindJob(const StatusRequest& request) {
  if (!request.run_dir.empty()) {
    absl::StatusOr<JobFile> job = ReadJobFile(request.run_dir);
    if (absl::IsNotFound(job.status())) {
      return absl::NotFoundError(
          absl::StrCat("no job file in ", request.run_dir,
                       " (the run directory of a job holds one once its machines have joined)"));
    }
    if (job.ok() && !OwnLauncherRunning(job->launcher_pid)) {
      return absl::NotFoundError(absl::StrCat(request.run_dir, ": its launcher (pid ",
                                              job->launcher_pid,
                                              ") is not a running process of yours"));
    }
    return job;
  }
  const Config& c = request.config;
  if (c.run_id.empty()) return FindLiveJob(request);
  std::vector<std::string> refused;
  std::vector<JobFile> live = LiveJobs(request, c.run_id, &refused);
  if (!live.empty()) return live.front();
  if (!c.main_process_ip.empty() && c.main_process_port > 0) {
    JobFile job;
    job.run_id = c.run_id;
    job.store_endpoint = absl::StrCat(c.main_process_ip, ":", c.main_process_port);
    job.num_machines = c.num_machines;
    job.tls_ca_file = c.tls_ca_file;
    return job;
  }
  return absl::NotFoundError(absl::StrCat(
      "no running job of yours with run id ", c.run_id, " under ", SearchedPlaces(request),
      Ignored(refused),
      "; on another machine give machine 0's --main_process_ip and --main_process_port"));
}

namespace {

// The job's token: $ACCEL_RDZV_TOKEN, then rdzv_token_file, then the token the launcher keeps in
// the run directory the job file was found in (never a path the job file names); "" when none
// (the store then refuses the query).
absl::StatusOr<std::string> StatusToken(const Config& config, const JobFile& job) {
  if (const char* token = env::Get(env::kRdzvToken); token != nullptr) return std::string(token);
  if (!config.rdzv_token_file.empty()) {
    absl::StatusOr<rendezvous::TokenFile> file = rendezvous::ReadTokenFile(config.rdzv_token_file);
    if (!file.ok()) return file.status();
    return file->token;
  }
  if (job.run_dir.empty()) return std::string();
  absl::StatusOr<std::string> kept = ReadJobToken(job.run_dir);
  if (absl::IsNotFound(kept.status())) return std::string();
  return kept;
}

}  // namespace

int RunStatusCommand(const StatusRequest& request, std::ostream& out, std::ostream& err) {
  absl::StatusOr<JobFile> job = FindJob(request);
  if (!job.ok()) {
    err << "accel-launch status: " << job.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<std::string> token = StatusToken(request.config, *job);
  if (!token.ok()) {
    err << "accel-launch status: rendezvous token: " << token.status().message() << "\n";
    return kExitUsage;
  }
  rendezvous::StoreClientOptions options;
  options.tls_ca_path =
      request.config.tls_ca_file.empty() ? job->tls_ca_file : request.config.tls_ca_file;
  options.rpc_deadline = absl::FromChrono(defaults::kStatusQueryDeadline);
  options.connect_timeout = options.rpc_deadline;
  auto store =
      rendezvous::ConnectStore(job->store_endpoint, *token, StatusNamespace(job->run_id), options);
  absl::StatusOr<StoredJob> stored =
      store.ok() ? ReadJob(**store, job->run_id) : absl::StatusOr<StoredJob>(store.status());
  if (!stored.ok()) {
    const absl::Status& s = stored.status();
    err << "accel-launch status: run " << job->run_id << " at " << job->store_endpoint << ": "
        << (absl::IsUnauthenticated(s)
                ? absl::StrCat("refused: ", s.message(),
                               " (give the job's token with ACCEL_RDZV_TOKEN or "
                               "--rdzv_token_file)")
            : absl::IsNotFound(s) ? "no status published yet (still joining, or status_interval 0)"
                                  : std::string(s.message()))
        << "\n";
    return absl::IsNotFound(s) ? kExitUsage : kExitRendezvous;
  }
  const std::vector<Straggler> stragglers = FindStragglers(
      stored->view.ranks, stored->info.straggler_threshold, 0.9 * stored->info.straggler_window_s);
  out << (request.json ? FormatStatusJson(stored->view, stragglers)
                       : FormatStatusTable(stored->view, stragglers));
  return kExitOk;
}

}  // namespace accel::launcher
