// `accel-launch status`: every rank of a running job, from any shell on any machine of the job.
//
// The job is found, in this order: the run directory given (its job file, written by the agent
// once the machines joined: launcher/status/job_file.h); the run id (--run_id) as a run directory
// under log_dir or $TMPDIR (accel-<run_id>-m<k>); machine 0's address (--main_process_ip and
// --main_process_port) with the run id; otherwise the one live job whose run directory is under
// log_dir or $TMPDIR. The token is the configured one (rdzv_token_file, ACCEL_RDZV_TOKEN), else
// the job file's. The rendezvous store refuses a wrong or missing token.
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
  EnvLookup env;  // TMPDIR, ACCEL_RDZV_TOKEN
};

// Returns the job the request names (a JobFile; one made from the config when the job is named by
// machine 0's address). NOT_FOUND / INVALID_ARGUMENT say what was looked for.
absl::StatusOr<JobFile> FindJob(const StatusRequest& request);

// Runs the command; returns its exit code.
int RunStatusCommand(const StatusRequest& request, std::ostream& out, std::ostream& err);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_COMMANDS_STATUS_COMMAND_H_
