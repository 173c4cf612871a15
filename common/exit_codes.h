// accel-launch's exit codes (DESIGN.md §8), for everything that returns or checks them: the
// launcher, its tests, the benchmarks and the test helpers that turn a wait status into a code.
// Header-only, no dependency beyond libc.
#ifndef ACCEL_COMMON_EXIT_CODES_H_
#define ACCEL_COMMON_EXIT_CODES_H_

#include <sys/wait.h>

namespace accel {

inline constexpr int kExitOk = 0;
// A worker failed (and no worker exit code in 1..127 is there to pass on), or a command could
// not do its work (`accel-launch config` could not write the file).
inline constexpr int kExitWorkerFailed = 1;
// Bad usage or config: nothing was launched.
inline constexpr int kExitUsage = 2;
// Rendezvous failed: timeout, a failed join check, the server lost.
inline constexpr int kExitRendezvous = 3;
// A forked child that could not exec its program (the shell's "command not found").
inline constexpr int kExitExecFailed = 127;
// 128+N: interrupted by signal N (the shell's convention).
inline constexpr int kExitSignalBase = 128;

// Returns the exit code for a process ended by signal `signal`.
constexpr int ExitCodeForSignal(int signal) { return kExitSignalBase + signal; }

// Returns the exit code of a child from its waitpid(2) status: its own code, or 128+N when
// signal N killed it.
inline int ExitCodeFromWaitStatus(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : ExitCodeForSignal(WTERMSIG(status));
}

// Returns the launcher's exit code for a job whose root cause is a worker that exited with
// `exit_code` or was killed by `signal` (non-zero): the worker's own code when it is in 1..127,
// else kExitWorkerFailed (128+N stays reserved for the launcher itself being interrupted).
constexpr int ExitCodeForWorker(int exit_code, int signal) {
  return signal == 0 && exit_code > 0 && exit_code < kExitSignalBase ? exit_code
                                                                     : kExitWorkerFailed;
}

}  // namespace accel

#endif  // ACCEL_COMMON_EXIT_CODES_H_
