#include "launcher/agent/single_worker.h"

#include <poll.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/exit_codes.h"
#include "common/logging.h"
#include "launcher/process/failure_report.h"

namespace accel::launcher {
namespace {

// Waits until `child` exits; returns the signal that interrupted the launcher (0 = none).
int WaitForChild(ChildProcess& child, const SignalFd& signals, absl::Duration grace) {
  int interrupted = 0;
  absl::Time kill_at = absl::InfiniteFuture();
  while (!child.TryReap()) {
    pollfd fds[2] = {{child.pidfd(), POLLIN, 0}, {signals.fd(), POLLIN, 0}};
    int timeout_ms = -1;
    if (kill_at != absl::InfiniteFuture()) {
      timeout_ms = static_cast<int>(
          std::clamp<int64_t>(absl::ToInt64Milliseconds(kill_at - absl::Now()) + 1, 0, 60000));
    }
    ::poll(fds, 2, timeout_ms);
    if (fds[1].revents != 0) {
      const SignalFd::Info info = signals.ReadInfo();
      if (info.signal != 0 && interrupted == 0) {
        interrupted = info.signal;
        if (!info.from_kernel) child.SignalGroup(info.signal);  // ^C already reached it
        kill_at = absl::Now() + grace;
      }
    }
    if (absl::Now() >= kill_at) {
      child.SignalGroup(SIGKILL);
      kill_at = absl::InfiniteFuture();
    }
  }
  return interrupted;
}

}  // namespace

int RunSingleWorker(SingleWorker worker, const SignalFd& signals) {
  worker.spec.own_process_group = false;
  worker.spec.child_mask = &signals.original_mask();
  std::fflush(stdout);
  std::fflush(stderr);
  absl::StatusOr<ChildProcess> child = Spawn(worker.spec);
  if (!child.ok()) {
    Notice(child.status().message());
    return kExitWorkerFailed;
  }
  const int interrupted = WaitForChild(*child, signals, worker.shutdown_grace);
  const ExitStatus& status = *child->status();
  if (interrupted != 0) {
    Notice(absl::StrCat("launch: interrupted by signal ", interrupted, "; worker stopped"));
    return ExitCodeForSignal(interrupted);
  }
  if (status.ok()) return kExitOk;
  WorkerFailure failure;
  failure.machine_rank = worker.machine_rank;
  failure.host = worker.host;
  failure.pid = child->pid();
  failure.exit = status;
  failure.time = absl::Now();
  failure.error_message = ReadErrorFileMessage(worker.error_file);
  NoticeBlock(FormatFailureReport({failure}, absl::StrCat(kLogPrefix, "worker failed:")));
  return kExitWorkerFailed;
}

}  // namespace accel::launcher
