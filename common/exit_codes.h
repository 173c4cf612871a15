// accel-launch's exit codes (the README's "Exit codes" table; tests/mp/launcher/cli/exit_codes_test
// checks the table against these constants and against real runs), for everything that returns or
// checks them: the launcher, its tests, the benchmarks and the test helpers that turn a wait
// status into a code. Header-only, no dependency beyond libc.
#ifndef ACCEL_COMMON_EXIT_CODES_H_
#define ACCEL_COMMON_EXIT_CODES_H_

#include <sys/wait.h>

namespace accel {

inline constexpr int kExitOk = 0;
// The job failed: a worker exited non-zero or was killed by a signal (its own code or signal is in
// the failure report, as under torchrun), or a command could not do its work (`accel-launch
// config` could not write the file). Never a worker's code passed through: 2 and 3 below always
// mean the launcher itself.
inline constexpr int kExitWorkerFailed = 1;
// Bad usage or config: nothing was launched.
inline constexpr int kExitUsage = 2;
// Rendezvous failed: timeout, a failed join check, the server lost, main_process_port in use.
inline constexpr int kExitRendezvous = 3;
// A forked child that could not exec its program (the shell's "command not found").
inline constexpr int kExitExecFailed = 127;
// 128+N: accel-launch itself was interrupted by signal N (the shell's convention).
inline constexpr int kExitSignalBase = 128;

// Returns the exit code for a process ended by signal `signal`.
constexpr int ExitCodeForSignal(int signal) { return kExitSignalBase + signal; }

// Returns the exit code of a child from its waitpid(2) status: its own code, or 128+N when
// signal N killed it.
inline int ExitCodeFromWaitStatus(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : ExitCodeForSignal(WTERMSIG(status));
}

}  // namespace accel

#endif  // ACCEL_COMMON_EXIT_CODES_H_
