#include "launcher/status/rank_tracker.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <utility>

#include "launcher/process/hang.h"
#include "launcher/process/proc_stat.h"

namespace accel::launcher {
namespace {

// Progress: steps, collectives or samples moved (time spent waiting is not progress).
bool Changed(const progress::Record& a, const progress::Record& b) {
  return a != b || a.samples != b.samples;
}

// Adds the wait in progress (the writer adds a wait only when it ends) to the time waiting, so
// that a window that ends inside a long wait does not count that wait as own work.
progress::Record WithWaitSoFar(progress::Record record) {
  if (record.wait_since_ns == 0) return record;
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now().time_since_epoch())
                       .count();
  const auto since = static_cast<std::int64_t>(record.wait_since_ns);
  if (now > since) record.collective_ns += static_cast<std::uint64_t>(now - since);
  return record;
}

// Own work over [from, to]: wall time minus time with a collective in flight (not below zero).
double WorkSeconds(const progress::Record& from, const progress::Record& to, absl::Duration d) {
  const double wall = absl::ToDoubleSeconds(d);
  const double in_collectives =
      to.collective_ns >= from.collective_ns ? (to.collective_ns - from.collective_ns) * 1e-9 : 0;
  return wall > in_collectives ? wall - in_collectives : 0;
}

// Own work over (from, to]: wall time minus time waiting for communication, and at least the
// time the rank was seen stopped (SIGSTOP, a debugger): a stopped rank holds its peers up even when
// it was stopped inside a collective, where its wait would otherwise hide it. Stopped time is
// estimated from the samples: an interval that ends in a stopped sample counts as stopped.
template <typename It>
double OwnSeconds(It from, It to) {
  double stopped = 0;
  for (It p = std::next(from); p != std::next(to); ++p) {
    if (p->stopped) stopped += absl::ToDoubleSeconds(p->time - std::prev(p)->time);
  }
  return std::max(WorkSeconds(from->record, to->record, to->time - from->time), stopped);
}

}  // namespace

RankTracker::RankTracker(int machine_rank, std::string host, absl::Duration window,
                         ProgressReader read, StoppedProbe stopped)
    : machine_rank_(machine_rank),
      host_(std::move(host)),
      window_(window),
      read_(read ? std::move(read) : ProgressReader(ReadProgressFile)),
      stopped_(stopped ? std::move(stopped)
                       : StoppedProbe([](pid_t pid) { return SampleProcessTree(pid).stopped; })) {}

void RankTracker::Started(int rank, int local_rank, pid_t pid, std::string progress_path,
                          absl::Time now) {
  Tracked t;
  t.local_rank = local_rank;
  t.pid = pid;
  t.progress_path = std::move(progress_path);
  t.started = now;
  t.changed = now;
  ranks_[rank] = std::move(t);
}

void RankTracker::Exited(int rank, int exit_code, int signal, absl::Time now) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) return;
  Read(it->second, now);  // its last record
  it->second.exited = true;
  it->second.stopped = false;
  it->second.exit_code = exit_code;
  it->second.exit_signal = signal;
}

void RankTracker::Sample(absl::Time now) {
  for (auto& [rank, t] : ranks_) {
    if (t.exited) continue;
    t.stopped = stopped_(t.pid);
    Read(t, now);
  }
}

void RankTracker::Read(Tracked& t, absl::Time now) const {
  if (t.progress_path.empty()) return;
  std::optional<progress::Record> record = read_(t.progress_path);
  if (!record.has_value()) return;
  record = WithWaitSoFar(*record);
  if (!t.history.empty()) {
    if (Changed(t.history.back().record, *record)) t.changed = now;
    t.before = t.history.back();
  } else {
    t.changed = now;
  }
  t.history.push_back(Point{now, *record, t.stopped});
  while (t.history.size() >= 2 && t.history[1].time <= now - window_) t.history.pop_front();
}

RankStatus RankTracker::Status(int rank, const Tracked& t, absl::Time now) const {
  RankStatus s;
  s.rank = rank;
  s.machine_rank = machine_rank_;
  s.local_rank = t.local_rank;
  s.host = host_;
  s.pid = t.pid;
  s.progress_age_s = absl::ToDoubleSeconds(now - t.changed);
  s.reports_progress = !t.history.empty();
  // A program that writes no progress record is "starting" for a while, then "no progress
  // reported" (kRunning without a record): it may well be working.
  s.state =
      s.reports_progress || now - t.started >= absl::FromChrono(defaults::kStatusNoProgressAfter)
          ? RankState::kRunning
          : RankState::kStarting;
  if (!t.history.empty()) {
    const Point& last = t.history.back();
    const Point& first = t.history.front();
    s.step = last.record.step;
    s.samples = last.record.samples;
    s.collective = last.record.collectives_started;
    const absl::Duration span = last.time - first.time;
    s.window_s = absl::ToDoubleSeconds(span);
    const std::uint64_t steps = last.record.step - std::min(first.record.step, last.record.step);
    if (span > absl::ZeroDuration()) {
      s.steps_per_s = steps / s.window_s;
      s.samples_per_s =
          (last.record.samples - std::min(first.record.samples, last.record.samples)) / s.window_s;
    }
    if (steps > 0) {
      s.step_time_s = s.window_s / steps;
      s.work_time_s = OwnSeconds(t.history.begin(), std::prev(t.history.end())) / steps;
    }
    if (t.before.has_value()) {
      const std::uint64_t recent =
          last.record.step - std::min(t.before->record.step, last.record.step);
      s.interval_s = absl::ToDoubleSeconds(last.time - t.before->time);
      s.interval_steps = recent;
      const std::array<Point, 2> interval = {*t.before, last};
      s.interval_work_s = OwnSeconds(interval.begin(), std::prev(interval.end())) /
                          static_cast<double>(std::max<std::uint64_t>(recent, 1));
    }
    if (last.record.in_collective() &&
        now - t.changed >= absl::FromChrono(defaults::kStatusWaitingAfter)) {
      s.state = RankState::kWaiting;
    }
  }
  if (t.stopped) s.state = RankState::kStopped;
  if (t.exited) {
    s.state = RankState::kExited;
    s.exit_code = t.exit_code;
    s.exit_signal = t.exit_signal;
  }
  return s;
}

std::vector<RankStatus> RankTracker::Statuses(absl::Time now) const {
  std::vector<RankStatus> out;
  out.reserve(ranks_.size());
  for (const auto& [rank, t] : ranks_) out.push_back(Status(rank, t, now));
  return out;
}

}  // namespace accel::launcher
