// The run directory: where one machine's launcher keeps a job's files (the job file and token for
// `accel-launch status`, each attempt's rank directories with the error and progress files, the
// preflight's files, the logs and step_times.csv). Private to the user who runs the job:
//   - with log_dir:   <log_dir>/<run_id>, mode 0700 (log_mode group: 0750); kept after the job;
//   - without:        $XDG_RUNTIME_DIR/accel-<run_id>-m<k> (0700) when XDG_RUNTIME_DIR is a
//                     directory of the user's that nobody else may enter, else a fresh
//                     $TMPDIR/accel-<run_id>-m<k>-XXXXXX (mkdtemp, 0700); removed after the job.
// A run directory that already exists is used only when it is a real directory owned by the user
// with exactly that mode (common/safe_file.h MakeOwnDir): one another user made first, a
// symlink, or one open to others is refused. Files inside are made relative to its fd.
#ifndef ACCEL_LAUNCHER_STATUS_RUN_DIR_H_
#define ACCEL_LAUNCHER_STATUS_RUN_DIR_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/unique_fd.h"
#include "launcher/config/source.h"

namespace accel::launcher {

// Modes of what a run directory holds: directories and log files, by log_mode.
mode_t RunDirMode(const std::string& log_mode);   // 0700, or 0750 for "group"
mode_t LogFileMode(const std::string& log_mode);  // 0600, or 0640 for "group"

struct RunDirPlace {
  std::string log_dir;  // "" = a scratch directory, removed after the job
  std::string log_mode = "private";
  std::string run_id;
  int machine_rank = 0;
};

struct RunDir {
  std::string path;
  UniqueFd fd;           // the directory, opened when it was made or checked
  bool scratch = false;  // no log_dir: removed when the launch ends
};

// Makes (or checks) the run directory of `place`. Errors say what is wrong and what to do.
absl::StatusOr<RunDir> CreateRunDir(const RunDirPlace& place, const EnvLookup& env);

// The directories under which scratch run directories live, in the order `status` searches
// them: XDG_RUNTIME_DIR (when usable, as above), then $TMPDIR (or /tmp).
std::vector<std::string> ScratchRoots(const EnvLookup& env);

// Returns the run directories of `run_id` ("*" = any) that `accel-launch status` may look at:
// <log_dir>/<run_id> with a log_dir, else accel-<run_id>-m* under ScratchRoots. Only the names:
// the caller checks each one's owner (OpenOwnDir) before reading anything in it.
std::vector<std::string> RunDirCandidates(const std::string& log_dir, const std::string& run_id,
                                          const EnvLookup& env);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_STATUS_RUN_DIR_H_
