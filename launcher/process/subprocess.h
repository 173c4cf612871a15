// Subprocess: start one worker with fork+exec and own it until it is reaped.
//
// gRPC forbids fork without exec, so the child runs only async-signal-safe calls between fork
// (glibc's _Fork: no atfork handlers) and execve: setpgid (own process group),
// prctl(PR_SET_PDEATHSIG, SIGKILL) plus a getppid() check (the worker dies with the launcher),
// the raw sched_setaffinity system call (CPU pinning), sigprocmask, dup2, execve. Everything the
// child needs (argv, envp, fds) is prepared before fork. PR_SET_PDEATHSIG fires when the *thread*
// that forked exits, so Spawn must be called from a thread that lives as long as the worker (the
// agent's main thread). Every fd opened here is O_CLOEXEC.
#ifndef ACCEL_LAUNCHER_PROCESS_SUBPROCESS_H_
#define ACCEL_LAUNCHER_PROCESS_SUBPROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/unique_fd.h"

namespace accel::launcher {

// Returns the absolute or relative path execve will run for `program`: as given when it contains
// a '/', otherwise the first executable match in `path_env` (a PATH value). NOT_FOUND or
// PERMISSION_DENIED (with the program named) when there is nothing executable to run.
absl::StatusOr<std::string> ResolveProgram(absl::string_view program, absl::string_view path_env);

struct SpawnSpec {
  std::string label;                     // for messages, e.g. "worker rank=3"
  std::string path;                      // resolved program (ResolveProgram)
  std::vector<std::string> argv;         // argv[0] included
  std::vector<std::string> env;          // "NAME=value"
  int stdin_fd = -1;                     // dup2'ed onto 0; -1 = inherit
  int stdout_fd = -1;                    // dup2'ed onto 1; -1 = inherit
  int stderr_fd = -1;                    // dup2'ed onto 2; -1 = inherit
  const sigset_t* child_mask = nullptr;  // signal mask for the child; nullptr = empty mask
  std::vector<int> cpus;                 // pin the child to these CPUs; empty = inherit
  // false: the child stays in the launcher's process group (the terminal's foreground group, so
  // a lone worker can read the terminal); signals then go to the child alone.
  bool own_process_group = true;
};

// How a process ended.
struct ExitStatus {
  int exit_code = 0;  // valid when signal == 0
  int signal = 0;     // > 0: killed by this signal
  bool ok() const { return signal == 0 && exit_code == 0; }
};

// Returns "exit code 3" or "signal 9 (SIGKILL)".
std::string DescribeExit(const ExitStatus& status);

// The single owner of a child process (its pid, process group and pidfd). Destroying an
// unreaped child SIGKILLs its process group and reaps it, so no worker outlives its owner.
// Not thread-safe: one thread owns it.
class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // Readable (POLLIN) once the child has exited; poll it instead of busy-waiting.
  int pidfd() const { return pidfd_.get(); }
  bool running() const { return pid_ > 0 && !status_.has_value(); }
  const std::optional<ExitStatus>& status() const { return status_; }

  // Sends `signal` to the child's process group (the child and anything it started), or to the
  // child alone when it stayed in the launcher's group.
  void SignalGroup(int signal) const;

  // SIGKILLs what is left of the reaped child's process group (its own children). The group id
  // is the reaped pid, so call it soon after reaping (before pids can wrap around).
  void KillGroupRemnants() const;

  // Reaps the child if it has exited (never blocks). Returns true once reaped.
  bool TryReap();

 private:
  friend absl::StatusOr<ChildProcess> Spawn(const SpawnSpec& spec);
  void KillAndReap();
  pid_t pid_ = -1;
  bool group_ = true;  // the child leads its own process group
  UniqueFd pidfd_;
  std::optional<ExitStatus> status_;
};

// Forks and execs `spec`. Returns once execve succeeded in the child, or the child's error
// ("spawn worker rank=3: execve ./train.bin: No such file or directory", "spawn worker rank=0:
// sched_setaffinity 0-3: Invalid argument").
absl::StatusOr<ChildProcess> Spawn(const SpawnSpec& spec);

// Waits up to `timeout` for `child` to exit (polling its pidfd) and reaps it. When the time runs
// out, SIGKILLs its process group, reaps it and returns DEADLINE_EXCEEDED naming `label`.
absl::StatusOr<ExitStatus> WaitForExit(ChildProcess& child, absl::Duration timeout,
                                       absl::string_view label);

// Returns a pipe (read end, write end), both O_CLOEXEC.
absl::StatusOr<std::pair<UniqueFd, UniqueFd>> MakePipe();

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_PROCESS_SUBPROCESS_H_
