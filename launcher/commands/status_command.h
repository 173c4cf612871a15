// `accel-launch status`: every rank of a running job, from any shell on any machine of the job.
//
// The job is found, in this order: the run directory given (its job file, written by the agent
// once the machines joined: launcher/status/job_file.h); the run id (--run_id) as a run directory
// under log_dir, or else $XDG_RUNTIME_DIR and $TMPDIR (accel-<run_id>-m<k>*:
// launcher/status/run_dir.h); machine 0's address (--main_process_ip and --main_process_port)
// with the run id; otherwise the one live job whose run directory is under those places. Only a
// job file the caller owns, in a run directory the caller owns, whose launcher is a running
// process of the caller's, is used: anything another user planted is refused or ignored, and
// said so. The token is the configured one (ACCEL_RDZV_TOKEN, rdzv_token_file), else the one the
// launcher keeps in the run directory (<run dir>/token, the caller's, 0600); never a path a job
// file names. The rendezvous store refuses a wrong or missing token.
//
// Prints a table of every rank (machine, host, local rank, pid, step, steps/s and samples/s over
// the window, own work per step, last progress age, state), the summary line and the stragglers;
// --json prints the same as one JSON object. Exit codes: 0; 2 when no job is found; 3 when the
// rendezvous cannot be reached or refuses the token (common/exit_codes.h).
#ifndef ACCEL_LAUNCHER_COMMANDS_STATUS_COMMAND_H_
#define ACCEL_LAUNCHER_COMMANDS_STATUS_COMMAND_H_

#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "launcher/config/config.h"
#include "launcher/config/source.h"
#include "launcher/status/job_file.h"

namespace accel::launcher {

struct StatusRequest {
  std::string run_dir;  // "" = find the job
  Config config;        // run_id, log_dir, main_process_ip/port, rdzv_token_file, tls_ca_file
  bool json = false;
  EnvLookup env;  // TMPDIR, XDG_RUNTIME_DIR
};

// Returns the job the request names (a JobFile; one made from the config when the job is named by
// machine 0's address). NOT_FOUND / INVALID_ARGUMENT say what was looked for.
absl::StatusOr<JobFile> FindJob(const StatusRequest& request);

// Runs the command; returns its exit code.
int RunStatusCommand(const StatusRequest& request, std::ostream& out, std::ostream& err);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_COMMANDS_STATUS_COMMAND_H_
