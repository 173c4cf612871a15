// The run directory's job file, <run dir>/job: how `accel-launch status`, run in a shell on this
// machine, finds the job's rendezvous store. "key=value" lines, written by the agent after it
// joined, mode 0600 in the private run directory (launcher/status/run_dir.h). The job's token,
// unless it came from ACCEL_RDZV_TOKEN, is kept beside it in <run dir>/token (0600) while the job
// runs; the job file never names a token file.
//
// Readers trust nothing another user could have made: a job file is read only when both it and
// its run directory are owned by the caller and writable by nobody else, the token file only when
// it is the caller's and private, and the launcher it names counts as running only when
// /proc/<pid> is the caller's.
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
  std::string tls_ca_file;
  int launcher_pid = 0;
  std::string run_dir;  // where it was read (not written)
};

// Writes <run dir>/job (mode 0600) into the run directory open as `dirfd`, through a fresh
// temporary file renamed into place. `run_dir` names it in errors.
absl::Status WriteJobFile(int dirfd, const std::string& run_dir, const JobFile& job);

// Returns the job file of `run_dir`. PERMISSION_DENIED (saying why, e.g. "owned by uid 1001")
// when the directory or the file is not the caller's or others may write it, or either is a
// symlink; NOT_FOUND when there is none; INVALID_ARGUMENT naming the first line that is not
// key=value, or a missing run_id / store_endpoint.
absl::StatusOr<JobFile> ReadJobFile(const std::string& run_dir);

// Writes `token` to <run dir>/token (mode 0600) in the run directory open as `dirfd`.
absl::Status WriteJobToken(int dirfd, const std::string& run_dir, const std::string& token);

// Returns the token in <run_dir>/token when it and the directory are the caller's and the file
// is private (0600); NOT_FOUND when there is none, PERMISSION_DENIED saying why otherwise.
absl::StatusOr<std::string> ReadJobToken(const std::string& run_dir);

// Returns true when process `pid` runs as the caller (its /proc/<pid> is the caller's): a pid of
// another user's process, or of none, is not this user's running launcher.
bool OwnLauncherRunning(int pid);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_STATUS_JOB_FILE_H_
