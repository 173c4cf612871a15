// The run directory's job file, <run dir>/job: how `accel-launch status`, run in a shell on this
// machine, finds the job's rendezvous store and its token. "key=value" lines, written by the
// agent after it joined. A token the launcher generated (a single-machine job) is kept beside it
// in <run dir>/token, readable by the owner only; a token given in ACCEL_RDZV_TOKEN is not written
// anywhere (the reader brings it).
#ifndef ACCEL_LAUNCHER_STATUS_JOB_FILE_H_
#define ACCEL_LAUNCHER_STATUS_JOB_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace accel::launcher {

inline constexpr char kJobFileName[] = "job";
inline constexpr char kJobTokenFileName[] = "token";

struct JobFile {
  std::string run_id;
  std::string store_endpoint;  // host:port
  int machine_rank = 0;
  int num_machines = 1;
  std::string token_file;  // "" = the token is not in a file
  std::string tls_ca_file;
  int launcher_pid = 0;
};

// Writes <run_dir>/job (a temporary file renamed into place). Errors name the file.
absl::Status WriteJobFile(const std::string& run_dir, const JobFile& job);

// Returns the job file at `path`; NOT_FOUND when it does not exist, INVALID_ARGUMENT naming the
// first line that is not key=value or a missing run_id / store_endpoint.
absl::StatusOr<JobFile> ReadJobFile(const std::string& path);

// Writes `token` to <run_dir>/token with mode 0600 and returns its path.
absl::StatusOr<std::string> WriteJobToken(const std::string& run_dir, const std::string& token);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_STATUS_JOB_FILE_H_
