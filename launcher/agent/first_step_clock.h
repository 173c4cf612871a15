// FirstStepClock: how long an in-place membership change took on this machine, as far as the
// launcher can see it: from this machine learning of the change (the server's restart event,
// AgentRendezvous::change_seen) to the first step its workers complete at the new world (a local
// rank's progress file, common/progress_record.h, shows a step beyond the newest any local rank
// had recorded when it was announced). Says it in one line:
//   "membership: generation 1: first step at world 4 done 0.14 s after this machine learned of
//   the change"
// It polls the progress files on its own thread every kPoll (2 ms) for at most kLimit; nothing is
// said when no step comes by then, or the watch ends first. Thread-safe.
#ifndef ACCEL_LAUNCHER_AGENT_FIRST_STEP_CLOCK_H_
#define ACCEL_LAUNCHER_AGENT_FIRST_STEP_CLOCK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace accel::launcher {

// Returns the line above for `generation`, `world` and `took`.
std::string FormatFirstStep(int generation, int world, absl::Duration took);

class FirstStepClock {
 public:
  static constexpr absl::Duration kPoll = absl::Milliseconds(2);
  static constexpr absl::Duration kLimit = absl::Minutes(5);

  // Starts the clock for `generation` of `world` ranks, which this machine learned of at `learned`;
  // `say` gets the line (null: Notice), on the clock's thread.
  FirstStepClock(int generation, int world, absl::Time learned,
                 std::function<void(const std::string&)> say = nullptr);
  // Stops the thread (within one poll).
  ~FirstStepClock();

  // Watches a running worker's progress file ("" = none: ignored); its step now joins the
  // baseline (the newest step recorded before the new world's first).
  void Add(const std::string& progress_file);

 private:
  void Run();

  const int generation_;
  const int world_;
  const absl::Time learned_;
  const std::function<void(const std::string&)> say_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::string> files_ ABSL_GUARDED_BY(mu_);
  std::uint64_t baseline_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_FIRST_STEP_CLOCK_H_
