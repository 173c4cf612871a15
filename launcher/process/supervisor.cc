#include "launcher/process/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "launcher/process/hang.h"

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

namespace {

struct Worker {
  WorkerLaunch launch;
  ChildProcess process;
};

int PollTimeoutMs(absl::Time now, absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) {
    return -1;
  }
  const int64_t ms = absl::ToInt64Milliseconds(absl::Ceil(deadline - now, absl::Milliseconds(1)));
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 60'000));
}

}  // namespace

AttemptResult Supervisor::Run(std::vector<WorkerLaunch> workers, OutputRouter& router,
                              const std::function<void(const WorkerFailure&)>& on_failure,
                              const std::function<void(int signal)>& on_interrupt) {
  AttemptResult result;
  std::vector<Worker> running;
  running.reserve(workers.size());
  HangDetector hang(options_.hang_timeout);
  const bool watch_hangs = options_.hang_timeout > absl::ZeroDuration();

  bool stopping = false;
  bool killed = false;
  absl::Time kill_deadline = absl::InfiniteFuture();
  absl::Time drain_deadline = absl::InfiniteFuture();
  absl::Time next_hang_check = absl::InfiniteFuture();

  auto signal_all = [&running](int signal) {
    for (Worker& w : running) {
      w.process.SignalGroup(signal);
    }
  };
  auto begin_stop = [&](int signal) {
    if (stopping) {
      return;
    }
    stopping = true;
    signal_all(signal);
    kill_deadline = absl::Now() + options_.shutdown_grace;
  };
  auto kill_now = [&] {
    signal_all(SIGKILL);
    killed = true;
    kill_deadline = absl::InfiniteFuture();
  };

  // Workers live in their own process groups: a read from the terminal would stop them
  // (SIGTTIN), so their stdin is /dev/null.
  UniqueFd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  for (WorkerLaunch& launch : workers) {
    auto pipes = router.AddWorker(launch.rank);
    if (!pipes.ok()) {
      result.end = AttemptEnd::kSpawnFailed;
      result.spawn_error = pipes.status();
      break;
    }
    launch.spec.stdin_fd = dev_null.get();
    launch.spec.stdout_fd = pipes->stdout_write.get();
    launch.spec.stderr_fd = pipes->stderr_write.get();
    launch.spec.child_mask = &signals_.original_mask();
    auto child = Spawn(launch.spec);
    if (!child.ok()) {
      result.end = AttemptEnd::kSpawnFailed;
      result.spawn_error = child.status();
      break;
    }
    if (watch_hangs && !launch.files.progress_file.empty()) {
      hang.Watch(launch.rank, launch.files.progress_file);
    }
    running.push_back(Worker{std::move(launch), *std::move(child)});
  }
  if (result.end == AttemptEnd::kSpawnFailed) {
    begin_stop(SIGTERM);
  }
  if (watch_hangs) {
    next_hang_check = absl::Now() + options_.monitor_interval;
  }

  std::vector<pollfd> fds;
  for (;;) {
    const bool any_running = std::any_of(running.begin(), running.end(),
                                         [](const Worker& w) { return w.process.running(); });
    absl::Time now = absl::Now();
    if (!any_running && drain_deadline == absl::InfiniteFuture()) {
      // All-or-nothing: whatever a worker left behind in its process group goes with it (and
      // stops holding its output pipes open).
      for (const Worker& w : running) {
        w.process.KillGroupRemnants();
      }
      drain_deadline = now + options_.drain_timeout;
    }
    if (!any_running && router.AllClosed()) {
      break;
    }
    if (now >= drain_deadline) {
      router.CloseAll();  // a grandchild still holds a pipe open: stop waiting for it
      break;
    }

    fds.clear();
    fds.push_back(pollfd{signals_.fd(), POLLIN, 0});
    fds.push_back(pollfd{abort_.fd(), POLLIN, 0});
    for (const Worker& w : running) {
      if (w.process.running()) {
        fds.push_back(pollfd{w.process.pidfd(), POLLIN, 0});
      }
    }
    router.AppendPollFds(&fds);
    absl::Time wake = std::min(
        {kill_deadline, drain_deadline, stopping ? absl::InfiniteFuture() : next_hang_check});
    const int ready = ::poll(fds.data(), fds.size(), PollTimeoutMs(now, wake));
    if (ready < 0 && errno != EINTR) {
      break;  // cannot happen with valid fds; the destructors reap
    }
    now = absl::Now();

    for (const pollfd& p : fds) {
      if (p.revents == 0) {
        continue;
      }
      if (p.fd == signals_.fd()) {
        for (int sig = signals_.Read(); sig != 0; sig = signals_.Read()) {
          if (stopping) {
            kill_now();  // second Ctrl-C (or any second signal): no more grace
            continue;
          }
          if (result.end == AttemptEnd::kSucceeded) {
            result.end = AttemptEnd::kInterrupted;
            result.signal = sig;
          }
          begin_stop(sig);  // forwarded as is
          if (result.end == AttemptEnd::kInterrupted && on_interrupt) {
            on_interrupt(sig);
          }
        }
      } else if (p.fd == abort_.fd()) {
        if (!stopping) {
          result.end = AttemptEnd::kAborted;
          result.abort_reason = abort_.reason();
          begin_stop(SIGTERM);
        }
        std::uint64_t value = 0;
        (void)!::read(abort_.fd(), &value, sizeof(value));
      } else if (router.Owns(p.fd)) {
        router.OnReadable(p.fd);
      }
    }

    // Reap after reading output, so a failed worker's last stderr lines are in its tail.
    std::vector<WorkerFailure> new_failures;
    for (Worker& w : running) {
      if (!w.process.running() || !w.process.TryReap()) {
        continue;
      }
      hang.Forget(w.launch.rank);
      if (w.process.status()->ok() || stopping) {
        continue;
      }
      WorkerFailure f;
      f.machine_rank = options_.machine_rank;
      f.host = options_.host;
      f.rank = w.launch.rank;
      f.local_rank = w.launch.local_rank;
      f.pid = w.process.pid();
      f.exit = *w.process.status();
      f.time = now;
      f.error_message = ReadErrorFileMessage(w.launch.files.error_file);
      new_failures.push_back(std::move(f));
    }
    if (!new_failures.empty()) {
      for (WorkerFailure& f : new_failures) {
        f.stderr_tail = router.StderrTail(f.rank);
      }
      result.end = AttemptEnd::kWorkerFailed;
      if (result.failures.empty() && on_failure) {
        on_failure(new_failures.front());
      }
      for (WorkerFailure& f : new_failures) {
        result.failures.push_back(std::move(f));
      }
      begin_stop(SIGTERM);
    }

    if (stopping && !killed && now >= kill_deadline) {
      kill_now();
    }
    if (!stopping && watch_hangs && now >= next_hang_check) {
      next_hang_check = now + options_.monitor_interval;
      std::vector<StalledRank> stalled = hang.Check(now);
      if (!stalled.empty()) {
        result.end = AttemptEnd::kHang;
        for (const StalledRank& s : stalled) {
          for (const Worker& w : running) {
            if (w.launch.rank != s.rank) {
              continue;
            }
            WorkerFailure f;
            f.machine_rank = options_.machine_rank;
            f.host = options_.host;
            f.rank = s.rank;
            f.local_rank = w.launch.local_rank;
            f.pid = w.process.pid();
            f.exit.signal = 0;
            f.exit.exit_code = 0;
            f.time = now;
            f.detail = absl::StrCat("hang: no progress for ", absl::FormatDuration(s.stalled_for),
                                    " (at step ", s.step, ")");
            result.failures.push_back(std::move(f));
          }
        }
        if (!result.failures.empty() && on_failure) {
          on_failure(result.failures.front());
        }
        begin_stop(SIGTERM);
      }
    }
  }

  // Error files and the final stderr tails are read once everything is drained.
  for (WorkerFailure& f : result.failures) {
    for (const Worker& w : running) {
      if (w.launch.rank != f.rank) {
        continue;
      }
      f.error_message = ReadErrorFileMessage(w.launch.files.error_file);
      f.stderr_tail = router.StderrTail(f.rank);
      if (result.end == AttemptEnd::kHang && w.process.status().has_value()) {
        f.exit = *w.process.status();
      }
    }
  }
  return result;
}

}  // namespace accel::launcher
