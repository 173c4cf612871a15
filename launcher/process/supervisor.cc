#include "launcher/process/supervisor.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/status/status.h"
#include "launcher/process/attempt_run.h"

namespace accel::launcher {

absl::StatusOr<std::unique_ptr<AbortChannel>> AbortChannel::Create() {
  std::unique_ptr<AbortChannel> channel(new AbortChannel());
  channel->fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!channel->fd_.valid()) {
    return absl::ErrnoToStatus(errno, "create abort eventfd");
  }
  return channel;
}

void AbortChannel::Abort(std::string reason) {
  {
    absl::MutexLock lock(&mu_);
    if (reason_.empty()) {
      reason_ = reason.empty() ? "aborted" : std::move(reason);
    }
  }
  const std::uint64_t one = 1;
  (void)!::write(fd_.get(), &one, sizeof(one));
}

std::string AbortChannel::reason() const {
  absl::MutexLock lock(&mu_);
  return reason_;
}

void AbortChannel::Reset() {
  absl::MutexLock lock(&mu_);
  reason_.clear();
  std::uint64_t value = 0;
  (void)!::read(fd_.get(), &value, sizeof(value));
}

AttemptResult Supervisor::Run(
    std::vector<WorkerLaunch> workers, OutputRouter& router,
    const std::function<void(const WorkerFailure&)>& on_failure,
    const std::function<void(int signal, const std::string& sender)>& on_interrupt,
    JobProgress* job, WorkerObserver* observer, RegroupHook regroup) {
  internal::AttemptRun attempt(options_, signals_, abort_, router, on_failure, on_interrupt, job,
                               observer, std::move(regroup));
  return attempt.Run(std::move(workers));
}

}  // namespace accel::launcher
