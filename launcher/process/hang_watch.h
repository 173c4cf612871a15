// HangWatch: one attempt's hang detection on this machine, from the first sample to the verdict
// the supervisor acts on. Each Check samples the local ranks (HangDetector), publishes them to
// the other machines (JobProgress, null for a single machine) and, once no rank of the job was
// active for the hang timeout (or none advanced for it while the collective counts show the
// others waiting on one rank: hang.h), settles the job's verdict: every machine proposes, and
// JobProgress decides one verdict for the job from every machine's own view of its ranks (so an
// observed stop on one machine beats an inference on another), the same on every machine. The
// machine that runs the root-cause rank ends the attempt and reports it; the others wait up to
// defaults::kHangVerdictWait for that report (it reaches them as an abort) before they end the
// attempt themselves. Not thread-safe.
#ifndef ACCEL_LAUNCHER_PROCESS_HANG_WATCH_H_
#define ACCEL_LAUNCHER_PROCESS_HANG_WATCH_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "common/defaults.h"
#include "launcher/process/hang.h"

namespace accel::launcher {

struct HangWatchOptions {
  int machine_rank = 0;
  std::string host;
  absl::Duration hang_timeout = absl::FromChrono(defaults::kHangTimeout);
  // A rank that has not completed its first step is not idle for this long after it was watched
  // (HangDetector's start-up grace).
  absl::Duration startup_timeout = absl::FromChrono(defaults::kStartupTimeout);
  // How long a proposed verdict may take to settle before this machine's own is used.
  absl::Duration settle_timeout = absl::FromChrono(defaults::kHangVerdictWait);
  // How long to wait for the root-cause machine's report.
  absl::Duration remote_wait = absl::FromChrono(defaults::kHangVerdictWait);
  TreeSampler sample_tree;  // null = SampleProcessTree
};

class HangWatch {
 public:
  enum class Action {
    kNone,        // keep going
    kEndLocal,    // the root cause runs here: end the attempt and report it
    kWaitRemote,  // the root cause runs on another machine: wait for its report (once)
    kEndRemote,   // that report did not come: end the attempt here
  };

  // `job` may be null (a single machine); it must outlive the watch (or its Regroup).
  HangWatch(HangWatchOptions options, JobProgress* job);

  void Watch(int rank, pid_t pid, std::string progress_path, absl::Time now) {
    detector_.Watch(rank, pid, std::move(progress_path), now);
  }
  void Forget(int rank) { detector_.Forget(rank); }
  // Moves the watch into a new generation (an in-place membership change): the ranks are
  // relabeled (HangDetector::Renumber) and `job` (may be null: this machine alone) replaces the
  // previous generation's exchange, which is not used again. A verdict being settled or awaited
  // is dropped: it was the old generation's, and the membership change answered it.
  void Regroup(const std::map<int, int>& renumbered, JobProgress* job);

  // Samples, publishes and decides; `output_bytes(rank)` is what the rank has written so far.
  Action Check(absl::Time now, const std::function<std::uint64_t(int)>& output_bytes);

  // The verdict behind the last action other than kNone.
  const HangVerdict& verdict() const { return verdict_; }
  // Returns whether verdict() is the job's, the same on every machine: settled through JobProgress
  // (or a single machine's), not this machine's own taken after the settle timeout.
  bool agreed() const { return agreed_; }

 private:
  enum class Phase { kWatching, kSettling, kWaitingRemote, kDone };
  // Returns the action for a verdict just settled (or taken as is after the settle timeout).
  Action Act(absl::Time now);

  const HangWatchOptions options_;
  JobProgress* job_;
  HangDetector detector_;
  Phase phase_ = Phase::kWatching;
  absl::Time deadline_ = absl::InfiniteFuture();
  HangVerdict verdict_;
  bool agreed_ = false;
};

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_PROCESS_HANG_WATCH_H_
