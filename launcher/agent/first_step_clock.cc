#include "launcher/agent/first_step_clock.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/logging.h"
#include "launcher/process/hang.h"

namespace accel::launcher {

std::string FormatFirstStep(int generation, int world, absl::Duration took) {
  return absl::StrFormat(
      "membership: generation %d: first step at world %d done %.2f s after this machine learned "
      "of the change",
      generation, world, absl::ToDoubleSeconds(took));
}

FirstStepClock::FirstStepClock(int generation, int world, absl::Time learned,
                               std::function<void(const std::string&)> say)
    : generation_(generation),
      world_(world),
      learned_(learned),
      say_(say ? std::move(say) : [](const std::string& line) { Notice(line); }) {
  thread_ = std::thread([this] { Run(); });
}

FirstStepClock::~FirstStepClock() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void FirstStepClock::Add(const std::string& progress_file) {
  if (progress_file.empty()) return;
  const std::optional<progress::Record> record = ReadProgressFile(progress_file);
  absl::MutexLock lock(&mu_);
  files_.push_back(progress_file);
  if (record.has_value()) baseline_ = std::max(baseline_, record->step);
}

void FirstStepClock::Run() {
  const absl::Time give_up = absl::Now() + kLimit;
  for (;;) {
    std::vector<std::string> files;
    std::uint64_t baseline = 0;
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stop_), kPoll);
      if (stop_ || absl::Now() >= give_up) return;
      files = files_;
      baseline = baseline_;
    }
    for (const std::string& file : files) {
      const std::optional<progress::Record> record = ReadProgressFile(file);
      if (record.has_value() && record->step > baseline) {
        say_(FormatFirstStep(generation_, world_, absl::Now() - learned_));
        return;
      }
    }
  }
}

}  // namespace accel::launcher
