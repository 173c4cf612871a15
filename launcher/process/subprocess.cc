#include "launcher/process/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/exit_codes.h"

namespace accel::launcher {
namespace {

// Returns 0 when `path` is an executable regular file, else the errno that describes why not.
int CheckExecutable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return errno;
  }
  if (S_ISDIR(st.st_mode)) {
    return EISDIR;
  }
  if (::access(path.c_str(), X_OK) != 0) {
    return errno;
  }
  return 0;
}

int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// What the child failed at, sent with errno through the error pipe.
enum ChildStage : int { kStageDup2 = 1, kStageAffinity = 2, kStageExec = 3 };

[[noreturn]] void FailChild(int error_fd, ChildStage stage) {
  const int report[2] = {stage, errno};
  (void)!::write(error_fd, report, sizeof(report));
  _exit(kExitExecFailed);
}

// What the child does between fork and exec, all prepared before fork.
struct ChildPlan {
  const char* path;
  char* const* argv;
  char* const* envp;
  int fds[3];
  const sigset_t* mask;
  const cpu_set_t* cpus;  // nullptr = inherit
  bool own_process_group;
  pid_t parent;
  int error_fd;
};

// Child side of Spawn: async-signal-safe calls only, never returns.
[[noreturn]] void ExecChild(const ChildPlan& plan) {
  if (plan.own_process_group) ::setpgid(0, 0);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != plan.parent) {
    _exit(kExitExecFailed);  // the launcher is already gone
  }
  if (plan.cpus != nullptr &&
      ::syscall(SYS_sched_setaffinity, 0, sizeof(cpu_set_t), plan.cpus) != 0) {
    FailChild(plan.error_fd, kStageAffinity);
  }
  for (int target = 0; target <= 2; ++target) {
    const int fd = plan.fds[target];
    if (fd < 0) {
      continue;
    }
    if (fd == target) {
      ::fcntl(fd, F_SETFD, 0);
    } else if (::dup2(fd, target) < 0) {
      FailChild(plan.error_fd, kStageDup2);
    }
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &dfl, nullptr);
  sigset_t empty;
  ::sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, plan.mask != nullptr ? plan.mask : &empty, nullptr);
  ::execve(plan.path, plan.argv, plan.envp);
  FailChild(plan.error_fd, kStageExec);
}

// Returns the parent's message for a child that failed at `stage` with `err`.
absl::Status ChildError(const SpawnSpec& spec, int stage, int err) {
  std::string what = absl::StrCat("execve ", spec.path);
  if (stage == kStageDup2) what = "dup2";
  if (stage == kStageAffinity)
    what = absl::StrCat("sched_setaffinity ", absl::StrJoin(spec.cpus, ","));
  return absl::ErrnoToStatus(err, absl::StrCat("spawn ", spec.label, ": ", what));
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) {
    out.push_back(const_cast<char*>(s.c_str()));
  }
  out.push_back(nullptr);
  return out;
}

}  // namespace

absl::StatusOr<std::string> ResolveProgram(absl::string_view program, absl::string_view path_env) {
  if (program.empty()) {
    return absl::InvalidArgumentError("resolve program: no program given");
  }
  if (program.find('/') != absl::string_view::npos) {
    std::string path(program);
    if (int err = CheckExecutable(path); err != 0) {
      return absl::ErrnoToStatus(err, absl::StrCat("resolve program ", path));
    }
    return path;
  }
  if (path_env.empty()) {
    path_env = "/usr/local/bin:/usr/bin:/bin";
  }
  int first_error = ENOENT;
  for (absl::string_view dir : absl::StrSplit(path_env, ':')) {
    std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", program);
    const int err = CheckExecutable(candidate);
    if (err == 0) {
      return candidate;
    }
    if (err != ENOENT && err != ENOTDIR && first_error == ENOENT) {
      first_error = err;
    }
  }
  return absl::ErrnoToStatus(first_error,
                             absl::StrCat("resolve program ", program, " (searched PATH)"));
}

std::string DescribeExit(const ExitStatus& status) {
  if (status.signal > 0) {
    const char* abbrev = ::sigabbrev_np(status.signal);
    return absl::StrCat("signal ", status.signal, " (SIG", abbrev != nullptr ? abbrev : "?", ")");
  }
  return absl::StrCat("exit code ", status.exit_code);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      group_(other.group_),
      pidfd_(std::move(other.pidfd_)),
      status_(other.status_) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    KillAndReap();
    pid_ = std::exchange(other.pid_, -1);
    group_ = other.group_;
    pidfd_ = std::move(other.pidfd_);
    status_ = other.status_;
  }
  return *this;
}

ChildProcess::~ChildProcess() { KillAndReap(); }

void ChildProcess::KillAndReap() {
  if (!running()) {
    return;
  }
  SignalGroup(SIGKILL);
  int wstatus = 0;
  while (::waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

void ChildProcess::SignalGroup(int signal) const {
  if (!running()) {
    return;
  }
  if (!group_ || ::kill(-pid_, signal) != 0) {
    ::kill(pid_, signal);  // group gone: the child itself
  }
}

void ChildProcess::KillGroupRemnants() const {
  if (pid_ > 0 && status_.has_value() && group_) {
    ::kill(-pid_, SIGKILL);
  }
}

bool ChildProcess::TryReap() {
  if (!running()) {
    return status_.has_value();
  }
  int wstatus = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &wstatus, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) {
    return false;
  }
  ExitStatus status;
  if (r < 0) {
    status.exit_code = 255;  // ECHILD: someone else reaped it; treat as failed
  } else if (WIFSIGNALED(wstatus)) {
    status.signal = WTERMSIG(wstatus);
  } else {
    status.exit_code = WEXITSTATUS(wstatus);
  }
  status_ = status;
  pidfd_.reset();
  return true;
}

absl::StatusOr<std::pair<UniqueFd, UniqueFd>> MakePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return absl::ErrnoToStatus(errno, "create pipe");
  }
  return std::make_pair(UniqueFd(fds[0]), UniqueFd(fds[1]));
}

absl::StatusOr<ChildProcess> Spawn(const SpawnSpec& spec) {
  std::vector<char*> argv = CStrings(spec.argv);
  std::vector<char*> envp = CStrings(spec.env);
  auto error_pipe = MakePipe();
  if (!error_pipe.ok()) {
    return error_pipe.status();
  }
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int cpu : spec.cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &cpus);
  }
  const ChildPlan plan{spec.path.c_str(),
                       argv.data(),
                       envp.data(),
                       {spec.stdin_fd, spec.stdout_fd, spec.stderr_fd},
                       spec.child_mask,
                       spec.cpus.empty() ? nullptr : &cpus,
                       spec.own_process_group,
                       ::getpid(),
                       error_pipe->second.get()};
  // _Fork (glibc >= 2.34) runs no atfork handlers: nothing of gRPC's or anyone's runs in the child.
  const pid_t pid = ::_Fork();
  if (pid < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("spawn ", spec.label, ": fork"));
  }
  if (pid == 0) {
    ExecChild(plan);
  }
  if (spec.own_process_group) {
    ::setpgid(pid, pid);  // also here, so the group exists before we ever signal it
  }
  ChildProcess child;
  child.pid_ = pid;
  child.group_ = spec.own_process_group;
  error_pipe->second.reset();
  int report[2] = {0, 0};  // {ChildStage, errno}
  ssize_t n;
  do {
    n = ::read(error_pipe->first.get(), report, sizeof(report));
  } while (n < 0 && errno == EINTR);
  if (n == sizeof(report)) {
    int wstatus = 0;
    while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    child.pid_ = -1;
    return ChildError(spec, report[0], report[1]);
  }
  child.pidfd_.reset(PidfdOpen(pid));
  if (!child.pidfd_.valid()) {
    return absl::ErrnoToStatus(errno, absl::StrCat("spawn ", spec.label, ": pidfd_open"));
  }
  return child;
}

}  // namespace accel::launcher

namespace accel::launcher {

absl::StatusOr<ExitStatus> WaitForExit(ChildProcess& child, absl::Duration timeout,
                                       absl::string_view label) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!child.TryReap()) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      child.SignalGroup(SIGKILL);
      while (!child.TryReap()) {
        pollfd fd{child.pidfd(), POLLIN, 0};
        (void)::poll(&fd, 1, 100);
      }
      return absl::DeadlineExceededError(
          absl::StrCat(label, ": still running after ", absl::FormatDuration(timeout), "; killed"));
    }
    pollfd fd{child.pidfd(), POLLIN, 0};
    (void)::poll(&fd, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
  }
  return *child.status();
}

}  // namespace accel::launcher
