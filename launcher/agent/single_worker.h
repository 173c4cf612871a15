// RunSingleWorker: the only worker of a one-process job that needs nothing watched (no
// rendezvous, no log_dir, no restarts, no hang detection), run as `accelerate launch` runs its
// one process: it inherits the terminal (stdin, stdout, stderr, so progress bars redraw and pdb
// reads) and stays in the launcher's process group (a ^C reaches it directly). The launcher stays
// its parent so that the exit code follows the README's contract: a worker's own code never
// passes through as one of the launcher's (common/exit_codes.h).
#ifndef ACCEL_LAUNCHER_AGENT_SINGLE_WORKER_H_
#define ACCEL_LAUNCHER_AGENT_SINGLE_WORKER_H_

#include <string>

#include "absl/time/time.h"
#include "launcher/process/signals.h"
#include "launcher/process/subprocess.h"

namespace accel::launcher {

struct SingleWorker {
  SpawnSpec spec;          // path, argv, env, cpus, label; the rest is set here
  std::string error_file;  // its ACCEL_ERROR_FILE, read for the report
  int machine_rank = 0;
  std::string host;
  absl::Duration shutdown_grace;  // after a signal: SIGTERM/forwarded → grace → SIGKILL
};

// Spawns the worker and waits for it; a SIGTERM/SIGHUP/SIGINT sent to the launcher (kill(2)) is
// forwarded, one from the terminal already reached the worker. Returns kExitOk, kExitWorkerFailed
// (after printing the failure report) or ExitCodeForSignal(N) when the launcher was interrupted.
int RunSingleWorker(SingleWorker worker, const SignalFd& signals);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_SINGLE_WORKER_H_
