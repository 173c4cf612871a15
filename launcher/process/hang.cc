#include "launcher/process/hang.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "common/unique_fd.h"

namespace accel::launcher {

std::optional<std::uint64_t> ReadProgressFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return std::nullopt;
  }
  unsigned char bytes[8];
  if (::pread(fd.get(), bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes))) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) {
    value = (value << 8) | bytes[i];
  }
  return value;
}

void HangDetector::Watch(int rank, std::string path) {
  ranks_[rank] = Progress{std::move(path), std::nullopt, absl::InfinitePast()};
}

std::vector<StalledRank> HangDetector::Check(absl::Time now) {
  bool any_watched = false;
  absl::Time latest = absl::InfinitePast();
  for (auto& [rank, progress] : ranks_) {
    const std::optional<std::uint64_t> step = ReadProgressFile(progress.path);
    if (!step.has_value()) {
      continue;
    }
    if (step != progress.step) {
      progress.step = step;
      progress.changed = now;
    }
    any_watched = true;
    latest = std::max(latest, progress.changed);
  }
  if (!any_watched || now - latest < timeout_) {
    return {};
  }
  std::vector<StalledRank> stalled;
  for (const auto& [rank, progress] : ranks_) {
    if (!progress.step.has_value()) {
      continue;
    }
    stalled.push_back(StalledRank{rank, *progress.step, now - progress.changed});
  }
  std::stable_sort(stalled.begin(), stalled.end(),
                   [](const StalledRank& a, const StalledRank& b) { return a.step < b.step; });
  return stalled;
}

}  // namespace accel::launcher
