// Hang detection on one machine, and the interface through which it sees the other machines.
//
// HangDetector samples this machine's ranks every monitor interval: libaccel's progress file
// (common/progress_record.h), the state and CPU time of the worker's process tree (/proc), and
// how many output bytes the rank wrote. A rank is active while its progress counters move, it
// writes output, or its process tree uses at least defaults::kHangBusyCpuFraction of a core over
// defaults::kHangCpuWindow. A rank advances while its progress record moves (steps, collectives
// or samples), it writes output, or its process tree reads or writes any bytes (/proc/<pid>/io).
// A job is hung when no rank of any machine was active for the hang timeout, or when no rank
// advanced for it while the ranks' collective counts show the others waiting in a collective one
// rank never reached. Start-up grace: a rank with a progress file whose record shows no completed
// step yet counts as active and advancing for the startup timeout after Watch (a worker still
// importing torch on a loaded host is not hung), unless a process of it is stopped
// (StalledInCollective: a rank spinning in a loop uses CPU but does not advance); hang_verdict.h
// then names the rank the others wait on. Not thread-safe.
//
// JobProgress is the other machines' side (launcher/agent/progress_exchange, over the rendezvous
// store): this machine publishes its ranks and reads how long the whole job has been idle, the
// other machines' ranks, and the job's verdict: decided once from every machine's own view of its
// ranks when a machine finds the job hung, the same on every machine.
#ifndef ACCEL_LAUNCHER_PROCESS_HANG_H_
#define ACCEL_LAUNCHER_PROCESS_HANG_H_

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "common/defaults.h"
#include "common/progress_record.h"
#include "launcher/process/hang_verdict.h"
#include "launcher/process/proc_stat.h"

namespace accel::launcher {

// Returns the record in the progress file at `path`, or nullopt when it has none yet.
std::optional<progress::Record> ReadProgressFile(const std::string& path);

// Reads a worker's process tree (proc_stat.h's SampleProcessTree; tests pass a fake).
using TreeSampler = std::function<ProcessTreeSample(pid_t)>;

class HangDetector {
 public:
  // `sample_tree` null = SampleProcessTree.
  HangDetector(int machine_rank, std::string host, TreeSampler sample_tree = nullptr,
               absl::Duration cpu_window = absl::FromChrono(defaults::kHangCpuWindow),
               double busy_cpu_fraction = defaults::kHangBusyCpuFraction,
               absl::Duration startup_timeout = absl::FromChrono(defaults::kStartupTimeout));

  // Starts watching `rank` (process `pid`; its progress file at `progress_path`, "" = none).
  void Watch(int rank, pid_t pid, std::string progress_path, absl::Time now);
  // Stops watching `rank` (it exited).
  void Forget(int rank) { ranks_.erase(rank); }
  // Relabels the watched ranks (an in-place membership change): rank `old` is `renumbered[old]`
  // from now on, with what was sampled of it; ranks not named keep theirs.
  void Renumber(const std::map<int, int>& renumbered);

  // Samples every rank; `output_bytes(rank)` is how many bytes the rank has written so far.
  void Sample(absl::Time now, const std::function<std::uint64_t(int)>& output_bytes);
  // Returns every watched rank as last sampled.
  std::vector<RankSnapshot> Snapshots(absl::Time now) const;
  // Returns how long no watched rank has been active (InfiniteDuration when none is watched).
  absl::Duration IdleFor(absl::Time now) const;
  // Returns how long no watched rank has advanced (InfiniteDuration when none is watched).
  absl::Duration StalledFor(absl::Time now) const;

 private:
  struct Watched {
    pid_t pid = 0;
    std::string progress_path;
    std::optional<progress::Record> progress;
    std::uint64_t output_bytes = 0;
    std::uint64_t io_bytes = 0;
    bool stopped = false;
    std::deque<std::pair<absl::Time, std::uint64_t>> cpu;  // (time, CPU ticks) over the window
    absl::Time active;                                     // when it was last active
    absl::Time advanced;                                   // when it last advanced
    absl::Time watched;                                    // when Watch began
    bool starting = false;  // in its start-up grace at the last Sample
  };
  // Returns true when `w`'s CPU use over the window reached the busy fraction.
  bool Busy(Watched& w, absl::Time now, std::uint64_t ticks) const;

  const int machine_rank_;
  const std::string host_;
  const TreeSampler sample_tree_;
  const absl::Duration cpu_window_;
  const double busy_cpu_fraction_;
  const absl::Duration startup_timeout_;
  const double ticks_per_second_;
  std::map<int, Watched> ranks_;
};

// The other machines, for hang detection. Calls never block: the implementation does its I/O on
// its own thread. Thread-safe.
class JobProgress {
 public:
  virtual ~JobProgress() = default;

  // Hands over this machine's ranks sampled at `now`, how long they have been idle and how long
  // none of them advanced.
  virtual void Publish(std::vector<RankSnapshot> ranks, absl::Duration idle_for,
                       absl::Duration stalled_for, absl::Time now) = 0;
  // Returns how long no rank of the job has been active as far as the store shows; zero while
  // unknown (the store unreachable: every machine is assumed active).
  virtual absl::Duration JobIdleFor(absl::Time now) const = 0;
  // Returns how long no rank of the job has advanced, as JobIdleFor.
  virtual absl::Duration JobStalledFor(absl::Time now) const = 0;
  // Returns the other machines' ranks as last read, their idle times brought forward to `now`.
  virtual std::vector<RankSnapshot> OtherRanks(absl::Time now) const = 0;
  // Tells the other machines that this machine found the job hung; `verdict` is this machine's
  // diagnosis (its job_idle_for and busy are the job's; its rank may rest on stale copies of the
  // other machines' ranks). The job's verdict is then decided from every machine's own view of
  // its ranks (DecideJobVerdict), not from this proposal's rank.
  virtual void Propose(const HangVerdict& verdict) = 0;
  // Returns the job's verdict once it is known (the same on every machine), also on a machine
  // that proposed none: HangWatch acts on it as soon as it appears.
  virtual std::optional<HangVerdict> Settled() const = 0;
};

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_PROCESS_HANG_H_
