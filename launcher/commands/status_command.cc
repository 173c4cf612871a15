#include "launcher/commands/status_command.h"

#include <glob.h>
#include <signal.h>

#include <cerrno>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/env_contract.h"
#include "common/env_reader.h"
#include "common/exit_codes.h"
#include "launcher/status/job_store.h"
#include "launcher/status/job_summary.h"
#include "launcher/status/status_format.h"
#include "rendezvous/grpc/store_client.h"
#include "rendezvous/grpc/token.h"

namespace accel::launcher {
namespace {

std::vector<std::string> Glob(const std::string& pattern) {
  glob_t found{};
  std::vector<std::string> out;
  if (::glob(pattern.c_str(), 0, nullptr, &found) == 0) {
    for (std::size_t i = 0; i < found.gl_pathc; ++i) out.emplace_back(found.gl_pathv[i]);
  }
  ::globfree(&found);
  return out;
}

std::string TempRoot(const StatusRequest& request) {
  std::optional<std::string> tmp = request.env ? request.env("TMPDIR") : std::nullopt;
  return tmp.has_value() && !tmp->empty() ? *tmp : "/tmp";
}

// Returns the job files of `run_id` ("*" = any run) under log_dir when it is given (the jobs
// that log there), else under $TMPDIR (the run directories of jobs without a log_dir).
std::vector<std::string> JobFiles(const StatusRequest& request, const std::string& run_id) {
  if (!request.config.log_dir.empty()) {
    return Glob(absl::StrCat(request.config.log_dir, "/", run_id, "/", kJobFileName));
  }
  return Glob(absl::StrCat(TempRoot(request), "/accel-", run_id, "-m*/", kJobFileName));
}

bool Alive(const JobFile& job) {
  return job.launcher_pid > 0 && (::kill(job.launcher_pid, 0) == 0 || errno == EPERM);
}

absl::StatusOr<JobFile> FindLiveJob(const StatusRequest& request) {
  std::vector<JobFile> live;
  std::vector<std::string> where;
  for (const std::string& path : JobFiles(request, "*")) {
    absl::StatusOr<JobFile> job = ReadJobFile(path);
    if (job.ok() && Alive(*job)) {
      live.push_back(*job);
      where.push_back(path.substr(0, path.size() - sizeof(kJobFileName)));
    }
  }
  if (live.size() == 1) return live.front();
  if (live.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no running job found under ",
                     request.config.log_dir.empty() ? TempRoot(request) : request.config.log_dir,
                     "; name one: accel-launch status RUN_DIR, or --run_id ID"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(live.size(), " running jobs: ", absl::StrJoin(where, ", "),
                   "; name one: accel-launch status RUN_DIR, or --run_id ID"));
}

}  // namespace

absl::StatusOr<JobFile> FindJob(const StatusRequest& request) {
  if (!request.run_dir.empty()) {
    absl::StatusOr<JobFile> job = ReadJobFile(absl::StrCat(request.run_dir, "/", kJobFileName));
    if (absl::IsNotFound(job.status())) {
      return absl::NotFoundError(
          absl::StrCat("no job file in ", request.run_dir,
                       " (the run directory of a job holds one once its machines have joined)"));
    }
    return job;
  }
  const Config& c = request.config;
  if (c.run_id.empty()) return FindLiveJob(request);
  for (const std::string& path : JobFiles(request, c.run_id)) {
    absl::StatusOr<JobFile> job = ReadJobFile(path);
    if (job.ok()) return job;
  }
  if (!c.main_process_ip.empty() && c.main_process_port > 0) {
    JobFile job;
    job.run_id = c.run_id;
    job.store_endpoint = absl::StrCat(c.main_process_ip, ":", c.main_process_port);
    job.num_machines = c.num_machines;
    job.tls_ca_file = c.tls_ca_file;
    return job;
  }
  return absl::NotFoundError(absl::StrCat(
      "no run directory of run ", c.run_id, " under ",
      c.log_dir.empty() ? "" : absl::StrCat(c.log_dir, " or "), TempRoot(request),
      "; on another machine give machine 0's --main_process_ip and --main_process_port"));
}

namespace {

// The job's token as a launch finds it: $ACCEL_RDZV_TOKEN, then rdzv_token_file, then the token
// file the job file names; "" when none (the store then refuses the query).
absl::StatusOr<std::string> StatusToken(const Config& config, const JobFile& job) {
  if (const char* token = env::Get(env::kRdzvToken); token != nullptr) return std::string(token);
  const std::string& path =
      config.rdzv_token_file.empty() ? job.token_file : config.rdzv_token_file;
  if (path.empty()) return std::string();
  absl::StatusOr<rendezvous::TokenFile> file = rendezvous::ReadTokenFile(path, config.strict);
  if (!file.ok()) return file.status();
  return file->token;
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
                ? "refused: wrong or missing token (give the job's token with ACCEL_RDZV_TOKEN "
                  "or --rdzv_token_file)"
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
