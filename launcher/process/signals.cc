#include "launcher/process/signals.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "launcher/process/subprocess.h"

namespace accel::launcher {

absl::StatusOr<SignalFd> SignalFd::Create() {
  SignalFd out;
  sigset_t mask;
  ::sigemptyset(&mask);
  ::sigaddset(&mask, SIGINT);
  ::sigaddset(&mask, SIGTERM);
  ::sigaddset(&mask, SIGHUP);
  if (int err = ::pthread_sigmask(SIG_BLOCK, &mask, &out.original_mask_); err != 0) {
    return absl::ErrnoToStatus(err, "block launcher signals");
  }
  // Workers start with the launcher's mask minus what we block only for ourselves.
  ::sigdelset(&out.original_mask_, SIGINT);
  ::sigdelset(&out.original_mask_, SIGTERM);
  ::sigdelset(&out.original_mask_, SIGHUP);
  out.fd_.reset(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!out.fd_.valid()) {
    return absl::ErrnoToStatus(errno, "create signalfd");
  }
  ::signal(SIGPIPE, SIG_IGN);
  return out;
}

int SignalFd::Read(pid_t* sender) const {
  const Info info = ReadInfo();
  if (sender != nullptr) *sender = info.sender;
  return info.signal;
}

SignalFd::Info SignalFd::ReadInfo() const {
  signalfd_siginfo info{};
  ssize_t n;
  do {
    n = ::read(fd_.get(), &info, sizeof(info));
  } while (n < 0 && errno == EINTR);
  if (n != sizeof(info)) {
    return {};
  }
  return {static_cast<int>(info.ssi_signo), info.ssi_code == SI_KERNEL,
          static_cast<pid_t>(info.ssi_pid)};
}

std::string DescribeLauncherSignal(int signal, const std::string& sender) {
  if (sender == "slurmstepd") {
    const char* name = ::sigabbrev_np(signal);
    return absl::StrCat("stopped by SIG", name != nullptr ? name : absl::StrCat(signal),
                        " from Slurm (scancel or the job's time limit)");
  }
  return absl::StrCat("interrupted by ", DescribeExit(ExitStatus{0, signal}));
}

}  // namespace accel::launcher
