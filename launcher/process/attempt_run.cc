#include "launcher/process/attempt_run.h"

#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/defaults.h"
#include "launcher/process/os_util.h"

namespace accel::launcher::internal {
namespace {

HangWatchOptions WatchOptions(const SupervisorOptions& options) {
  HangWatchOptions watch;
  watch.machine_rank = options.machine_rank;
  watch.host = options.host;
  watch.hang_timeout = options.hang_timeout;
  watch.startup_timeout = options.startup_timeout;
  return watch;
}

int PollTimeoutMs(absl::Time now, absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) {
    return -1;
  }
  const int64_t ms = absl::ToInt64Milliseconds(absl::Ceil(deadline - now, absl::Milliseconds(1)));
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 60'000));
}

}  // namespace

AttemptRun::AttemptRun(
    const SupervisorOptions& options, const SignalFd& signals, AbortChannel& abort,
    OutputRouter& router, const std::function<void(const WorkerFailure&)>& on_failure,
    const std::function<void(int signal, const std::string& sender)>& on_interrupt,
    JobProgress* job, WorkerObserver* observer, RegroupHook regroup)
    : options_(options),
      signals_(signals),
      abort_(abort),
      router_(router),
      on_failure_(on_failure),
      on_interrupt_(on_interrupt),
      observer_(observer),
      regroup_(std::move(regroup)),
      hang_(WatchOptions(options), job),
      watch_hangs_(options.hang_timeout > absl::ZeroDuration()) {}

AttemptResult AttemptRun::Run(std::vector<WorkerLaunch> launches) {
  SpawnAll(std::move(launches));
  while (PollOnce()) {
  }
  CompleteFailures();
  return std::move(result_);
}

void AttemptRun::SpawnAll(std::vector<WorkerLaunch> launches) {
  workers_.reserve(launches.size());
  // Workers live in their own process groups: a read from the terminal would stop them
  // (SIGTTIN), so their stdin is /dev/null.
  UniqueFd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  for (WorkerLaunch& launch : launches) {
    auto pipes = router_.AddWorker(launch.rank);
    if (!pipes.ok()) {
      result_.end = AttemptEnd::kSpawnFailed;
      result_.spawn_error = pipes.status();
      break;
    }
    launch.spec.stdin_fd = dev_null.get();
    launch.spec.stdout_fd = pipes->stdout_write.get();
    launch.spec.stderr_fd = pipes->stderr_write.get();
    launch.spec.child_mask = &signals_.original_mask();
    auto child = Spawn(launch.spec);
    if (!child.ok()) {
      result_.end = AttemptEnd::kSpawnFailed;
      result_.spawn_error = child.status();
      break;
    }
    if (watch_hangs_) {
      hang_.Watch(launch.rank, child->pid(), launch.files.progress_file, absl::Now());
    }
    if (observer_ != nullptr) observer_->Started(launch, child->pid());
    workers_.push_back(Worker{std::move(launch), *std::move(child)});
  }
  if (result_.end == AttemptEnd::kSpawnFailed) {
    BeginStop(SIGTERM);
  }
  if (watch_hangs_) {
    next_hang_check_ = absl::Now() + options_.monitor_interval;
  }
}

bool AttemptRun::PollOnce() {
  absl::Time now = absl::Now();
  if (Over(now)) {
    return false;
  }
  fds_.clear();
  fds_.push_back(pollfd{signals_.fd(), POLLIN, 0});
  fds_.push_back(pollfd{abort_.fd(), POLLIN, 0});
  for (const Worker& w : workers_) {
    if (w.process.running()) {
      fds_.push_back(pollfd{w.process.pidfd(), POLLIN, 0});
    }
  }
  router_.AppendPollFds(&fds_);
  const int ready = ::poll(fds_.data(), fds_.size(), PollTimeoutMs(now, NextWake()));
  if (ready < 0 && errno != EINTR) {
    return false;  // cannot happen with valid fds; the destructors reap
  }
  now = absl::Now();

  for (const pollfd& p : fds_) {
    if (p.revents == 0) {
      continue;
    }
    if (p.fd == signals_.fd()) {
      OnSignals();
    } else if (p.fd == abort_.fd()) {
      OnAbort();
    } else if (router_.Owns(p.fd)) {
      router_.OnReadable(p.fd);
    }
  }
  router_.FlushHeld(now);  // de-duplicated console lines whose window ended
  OnExit(now);  // after reading output, so a failed worker's last stderr lines are in its tail
  if (stopping_ && !killed_ && now >= kill_deadline_) {
    KillNow();
  }
  if (!stopping_ && watch_hangs_ && now >= next_hang_check_) {
    OnHangCheck(now);
  }
  return true;
}

bool AttemptRun::Over(absl::Time now) {
  const bool any_running = std::any_of(workers_.begin(), workers_.end(),
                                       [](const Worker& w) { return w.process.running(); });
  if (!any_running && drain_deadline_ == absl::InfiniteFuture()) {
    // All-or-nothing: whatever a worker left behind in its process group goes with it (and
    // stops holding its output pipes open).
    for (const Worker& w : workers_) {
      w.process.KillGroupRemnants();
    }
    drain_deadline_ = now + options_.drain_timeout;
  }
  if (!any_running && router_.AllClosed()) {
    return true;
  }
  if (now >= drain_deadline_) {
    router_.CloseAll();  // a grandchild still holds a pipe open: stop waiting for it
    return true;
  }
  return false;
}

absl::Time AttemptRun::NextWake() const {
  return std::min({kill_deadline_, drain_deadline_, router_.NextFlush(),
                   stopping_ ? absl::InfiniteFuture() : next_hang_check_});
}

void AttemptRun::OnSignals() {
  pid_t sender = 0;
  for (int sig = signals_.Read(&sender); sig != 0; sig = signals_.Read(&sender)) {
    // The first signal during another machine's abort says why this machine stops too (a
    // scheduler signals every machine; one of them tells the others first).
    const bool explains_abort = result_.end == AttemptEnd::kAborted && result_.signal == 0;
    if (stopping_ && !explains_abort) {
      KillNow();  // second Ctrl-C (or any second signal): no more grace
      continue;
    }
    if (result_.end == AttemptEnd::kSucceeded || explains_abort) {
      result_.end = AttemptEnd::kInterrupted;
      result_.signal = sig;
      result_.signal_sender = ProcessName(sender);
    }
    BeginStop(sig);  // forwarded as is
    if (result_.end == AttemptEnd::kInterrupted && on_interrupt_) {
      on_interrupt_(sig, result_.signal_sender);
    }
  }
}

void AttemptRun::OnAbort() {
  const bool any_running = std::any_of(workers_.begin(), workers_.end(),
                                       [](const Worker& w) { return w.process.running(); });
  if (!stopping_ && any_running && regroup_) {
    if (std::optional<Regroup> next = regroup_(); next.has_value()) {
      ApplyRegroup(*next);
      return;  // the workers go on in the next generation; the hook's join re-armed the channel
    }
  }
  if (!stopping_) {
    result_.end = AttemptEnd::kAborted;
    result_.abort_reason = abort_.reason();
    BeginStop(SIGTERM);
  }
  std::uint64_t value = 0;
  (void)!::read(abort_.fd(), &value, sizeof(value));
}

void AttemptRun::ApplyRegroup(const Regroup& next) {
  std::map<int, int> renumbered;
  for (const Worker& w : workers_) renumbered[w.launch.rank] = next.base_rank + w.launch.local_rank;
  router_.Renumber(renumbered);
  hang_.Regroup(renumbered, next.job);
  // A verdict of the old generation that waited for its root cause's machine: answered by the
  // membership change (that machine left).
  result_.hang_notes.clear();
  result_.hang_verdict.reset();
  result_.hang_verdict_agreed = false;
  observer_ = next.observer;
  for (Worker& w : workers_) {
    w.launch.rank = renumbered[w.launch.rank];
    w.launch.spec.label = absl::StrCat("worker rank=", w.launch.rank);
    if (observer_ != nullptr && w.process.running()) observer_->Started(w.launch, w.process.pid());
  }
}

void AttemptRun::OnExit(absl::Time now) {
  std::vector<WorkerFailure> new_failures;
  for (Worker& w : workers_) {
    if (!w.process.running() || !w.process.TryReap()) {
      continue;
    }
    hang_.Forget(w.launch.rank);
    if (observer_ != nullptr) observer_->Exited(w.launch.rank, *w.process.status());
    if (w.process.status()->ok() || stopping_) {
      continue;  // peers stopped by us are not failures
    }
    WorkerFailure f = NewFailure(w, now);
    f.exit = *w.process.status();
    f.error_message = ReadErrorFileMessage(w.launch.files.error_file);
    new_failures.push_back(std::move(f));
  }
  if (new_failures.empty() || OwnSignalFollows(new_failures)) {
    return;
  }
  for (WorkerFailure& f : new_failures) {
    f.stderr_tail = router_.StderrTail(f.rank);
  }
  result_.end = AttemptEnd::kWorkerFailed;
  if (result_.failures.empty() && on_failure_) {
    on_failure_(new_failures.front());
  }
  for (WorkerFailure& f : new_failures) {
    result_.failures.push_back(std::move(f));
  }
  BeginStop(SIGTERM);
}

bool AttemptRun::OwnSignalFollows(const std::vector<WorkerFailure>& failures) {
  for (const WorkerFailure& f : failures) {
    const int sig = f.exit.signal;
    if (sig != SIGTERM && sig != SIGINT && sig != SIGHUP) return false;
  }
  pollfd p = {signals_.fd(), POLLIN, 0};
  const auto grace = absl::FromChrono(defaults::kOwnSignalGrace);
  if (::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(grace))) <= 0) return false;
  OnSignals();
  return stopping_;
}

void AttemptRun::OnHangCheck(absl::Time now) {
  next_hang_check_ = now + options_.monitor_interval;
  const HangWatch::Action action =
      hang_.Check(now, [this](int rank) { return router_.BytesFrom(rank); });
  switch (action) {
    case HangWatch::Action::kNone:
      return;
    case HangWatch::Action::kWaitRemote:
      result_.hang_notes = hang_.verdict().others;  // kept if the root machine's abort comes
      result_.hang_verdict = hang_.verdict();
      result_.hang_verdict_agreed = hang_.agreed();
      return;
    case HangWatch::Action::kEndLocal:
    case HangWatch::Action::kEndRemote:
      EndWithHang(hang_.verdict(), action == HangWatch::Action::kEndLocal, now);
      return;
  }
}

void AttemptRun::EndWithHang(const HangVerdict& verdict, bool local, absl::Time now) {
  result_.end = AttemptEnd::kHang;
  result_.hang_notes = verdict.others;
  result_.hang_verdict = verdict;
  result_.hang_verdict_agreed = hang_.agreed();
  WorkerFailure f;
  f.machine_rank = verdict.machine_rank;
  f.host = verdict.host;
  f.rank = verdict.rank;
  f.local_rank = -1;
  f.time = now;
  for (const Worker& w : workers_) {
    if (local && w.launch.rank == verdict.rank) f = NewFailure(w, now);
  }
  f.detail = DescribeVerdict(verdict);
  f.agreed_hang = local && hang_.agreed();
  result_.failures.push_back(f);
  if (local && on_failure_) {
    on_failure_(result_.failures.front());
  }
  BeginStop(SIGTERM);
}

void AttemptRun::BeginStop(int signal) {
  if (stopping_) {
    return;
  }
  stopping_ = true;
  if (observer_ != nullptr) observer_->WorkersStopping();
  SignalAll(signal);
  kill_deadline_ = absl::Now() + options_.shutdown_grace;
}

void AttemptRun::KillNow() {
  SignalAll(SIGKILL);
  killed_ = true;
  kill_deadline_ = absl::InfiniteFuture();
}

void AttemptRun::SignalAll(int signal) {
  for (Worker& w : workers_) {
    if (signal != SIGKILL) {
      w.process.SignalGroup(SIGCONT);  // a stopped worker acts on `signal` only once continued
    }
    w.process.SignalGroup(signal);
  }
}

WorkerFailure AttemptRun::NewFailure(const Worker& worker, absl::Time now) const {
  WorkerFailure f;
  f.machine_rank = options_.machine_rank;
  f.host = options_.host;
  f.rank = worker.launch.rank;
  f.local_rank = worker.launch.local_rank;
  f.pid = worker.process.pid();
  f.time = now;
  return f;
}

void AttemptRun::CompleteFailures() {
  for (WorkerFailure& f : result_.failures) {
    for (const Worker& w : workers_) {
      if (w.launch.rank != f.rank) {
        continue;
      }
      f.error_message = ReadErrorFileMessage(w.launch.files.error_file);
      f.stderr_tail = router_.StderrTail(f.rank);
      if (result_.end == AttemptEnd::kHang && w.process.status().has_value()) {
        f.exit = *w.process.status();
      }
    }
  }
}

}  // namespace accel::launcher::internal
