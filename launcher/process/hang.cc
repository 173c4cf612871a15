#include "launcher/process/hang.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "common/unique_fd.h"

namespace accel::launcher {

std::optional<progress::Record> ReadProgressFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return std::nullopt;
  }
  unsigned char bytes[progress::kFileBytes];
  const ssize_t n = ::pread(fd.get(), bytes, sizeof(bytes), 0);
  if (n < 8) {
    return std::nullopt;
  }
  return progress::DecodeRecord(bytes, static_cast<std::size_t>(n));
}

HangDetector::HangDetector(int machine_rank, std::string host, TreeSampler sample_tree,
                           absl::Duration cpu_window, double busy_cpu_fraction,
                           absl::Duration startup_timeout)
    : machine_rank_(machine_rank),
      host_(std::move(host)),
      sample_tree_(sample_tree ? std::move(sample_tree) : TreeSampler(SampleProcessTree)),
      cpu_window_(cpu_window),
      busy_cpu_fraction_(busy_cpu_fraction),
      startup_timeout_(startup_timeout),
      ticks_per_second_(ClockTicksPerSecond()) {}

void HangDetector::Watch(int rank, pid_t pid, std::string progress_path, absl::Time now) {
  Watched w;
  w.pid = pid;
  w.progress_path = std::move(progress_path);
  w.active = now;
  w.advanced = now;
  w.watched = now;
  ranks_[rank] = std::move(w);
}

void HangDetector::Renumber(const std::map<int, int>& renumbered) {
  std::map<int, Watched> ranks;
  for (auto& [rank, w] : ranks_) {
    auto it = renumbered.find(rank);
    ranks[it == renumbered.end() ? rank : it->second] = std::move(w);
  }
  ranks_ = std::move(ranks);
}

bool HangDetector::Busy(Watched& w, absl::Time now, std::uint64_t ticks) const {
  w.cpu.emplace_back(now, ticks);
  while (w.cpu.size() >= 2 && w.cpu[1].first <= now - cpu_window_) {
    w.cpu.pop_front();  // keep one sample at least a window old as the baseline
  }
  const auto& [since, base] = w.cpu.front();
  if (now - since < cpu_window_ / 2 || ticks <= base) {
    return false;
  }
  const double used_s = static_cast<double>(ticks - base) / ticks_per_second_;
  return used_s >= busy_cpu_fraction_ * absl::ToDoubleSeconds(now - since);
}

void HangDetector::Sample(absl::Time now, const std::function<std::uint64_t(int)>& output_bytes) {
  for (auto& [rank, w] : ranks_) {
    bool active = false;
    bool advanced = false;
    if (!w.progress_path.empty()) {
      std::optional<progress::Record> record = ReadProgressFile(w.progress_path);
      if (record.has_value() && w.progress.has_value()) {
        // The first record read is a start, not an advance; samples are an advance, not
        // activity (hang detection's notion of progress is steps and collectives).
        active = record != w.progress;
        advanced = active || record->samples != w.progress->samples;
      }
      if (record.has_value()) w.progress = record;
    }
    const std::uint64_t bytes = output_bytes ? output_bytes(rank) : 0;
    active = active || bytes != w.output_bytes;
    w.output_bytes = bytes;
    const ProcessTreeSample tree = sample_tree_(w.pid);
    w.stopped = tree.stopped;
    advanced = advanced || active || tree.io_bytes != w.io_bytes;
    w.io_bytes = tree.io_bytes;
    active = Busy(w, now, tree.cpu_ticks) || active;
    // Start-up grace: no step completed yet (importing, loading, building the model).
    // Its first step or first collective ends start-up: a rank waiting in a collective has
    // started (a Python program that never steps, say, must still be judged).
    const bool starting = !w.progress_path.empty() &&
                          (!w.progress.has_value() ||
                           (w.progress->step == 0 && w.progress->collectives_started == 0)) &&
                          now - w.watched < startup_timeout_;
    w.starting = starting;
    if (active && !w.stopped) {
      w.active = now;
    }
    if (advanced && !w.stopped) {
      w.advanced = now;
    }
  }
  // The grace counts a starting rank as active, unless another rank is seen stopped: then the
  // job cannot go on whatever the starting ones do, and the stopped rank is named at once.
  bool any_stopped = false;
  for (const auto& [rank, w] : ranks_) any_stopped = any_stopped || w.stopped;
  if (any_stopped) return;
  for (auto& [rank, w] : ranks_) {
    if (w.starting && !w.stopped) {
      w.active = now;
      w.advanced = now;
    }
  }
}

std::vector<RankSnapshot> HangDetector::Snapshots(absl::Time now) const {
  std::vector<RankSnapshot> out;
  out.reserve(ranks_.size());
  for (const auto& [rank, w] : ranks_) {
    RankSnapshot s;
    s.rank = rank;
    s.machine_rank = machine_rank_;
    s.host = host_;
    s.progress = w.progress;
    s.stopped = w.stopped;
    s.idle_for = now - w.active;
    s.stalled_for = now - w.advanced;
    out.push_back(std::move(s));
  }
  return out;
}

absl::Duration HangDetector::IdleFor(absl::Time now) const {
  absl::Duration idle = absl::InfiniteDuration();
  for (const auto& [rank, w] : ranks_) {
    idle = std::min(idle, now - w.active);
  }
  return idle;
}

absl::Duration HangDetector::StalledFor(absl::Time now) const {
  absl::Duration stalled = absl::InfiniteDuration();
  for (const auto& [rank, w] : ranks_) {
    stalled = std::min(stalled, now - w.advanced);
  }
  return stalled;
}

}  // namespace accel::launcher
