// ChildProcess: a test-only child started with posix_spawn (never plain fork: the test process
// runs gRPC), its stdout+stderr read line by line with deadlines. Kills and reaps on destruction.
#ifndef ACCEL_TESTS_TESTING_RDZV_PROCESS_H_
#define ACCEL_TESTS_TESTING_RDZV_PROCESS_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/exit_codes.h"

extern char** environ;

namespace accel::testing {

class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (pid_ > 0 && exit_code_ < 0) {
      ::kill(pid_, SIGKILL);
      Reap(absl::InfiniteFuture());
    }
    if (fd_ >= 0) ::close(fd_);
  }

  // Starts argv[0] with `argv`; false when it cannot be started.
  bool Start(const std::vector<std::string>& argv) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    fd_ = fds[0];
    return rc == 0;
  }

  // Returns the first unread line starting with `prefix`, or "" at the deadline / EOF.
  std::string WaitForLine(const std::string& prefix, absl::Time deadline) {
    while (true) {
      std::size_t start = 0;
      while (true) {
        const std::size_t nl = output_.find('\n', start);
        if (nl == std::string::npos) break;
        if (nl >= scanned_ && output_.compare(start, prefix.size(), prefix) == 0) {
          scanned_ = nl + 1;
          return output_.substr(start, nl - start);
        }
        start = nl + 1;
      }
      if (!ReadSome(deadline)) return "";
    }
  }

  // Waits for the exit code (ExitCodeFromWaitStatus); SIGKILLs the child at the deadline.
  int Wait(absl::Time deadline) {
    while (ReadSome(deadline)) {
    }
    return Reap(deadline);
  }

  void Signal(int sig) { ::kill(pid_, sig); }
  const std::string& output() const { return output_; }

 private:
  // Reads what is available before `deadline`; false on EOF or deadline.
  bool ReadSome(absl::Time deadline) {
    if (fd_ < 0) return false;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready <= 0) return ready < 0 && errno == EINTR;
    char buffer[4096];
    const ssize_t n = ::read(fd_, buffer, sizeof(buffer));
    if (n <= 0) {
      ::close(fd_);
      fd_ = -1;
      return false;
    }
    output_.append(buffer, static_cast<std::size_t>(n));
    return true;
  }

  int Reap(absl::Time deadline) {
    while (exit_code_ < 0) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exit_code_ = ExitCodeFromWaitStatus(status);
        break;
      }
      if (absl::Now() >= deadline) {
        ::kill(pid_, SIGKILL);
        deadline = absl::InfiniteFuture();
        continue;
      }
      absl::SleepFor(absl::Milliseconds(5));
    }
    return exit_code_;
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  int exit_code_ = -1;
  std::string output_;
  std::size_t scanned_ = 0;
};

}  // namespace accel::testing

#endif  // ACCEL_TESTS_TESTING_RDZV_PROCESS_H_
