// When DDP overlaps communication with backward: the rule the launcher's plan states and libaccel
// applies. Standard library and Linux only, header-only (libaccel's worker-only build has no
// abseil).
//
// Overlap runs each rank's collectives on a communication thread while the training thread keeps
// computing; on CPU that thread needs a core of its own. When the machine's processes times their
// compute threads already fill every core, the communication thread only steals time from the
// compute it should hide behind (and adds two thread hand-offs per bucket), so it is off.
#ifndef ACCEL_COMMON_OVERLAP_H_
#define ACCEL_COMMON_OVERLAP_H_

#include <sched.h>
#include <unistd.h>

#include <string>

namespace accel {

// Returns the cores this process may run on (its affinity mask), at least 1.
inline int UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

// True when `processes` x `threads` (compute threads per process) leave a core free.
constexpr bool OverlapHelps(int processes, int threads, int cores) {
  return processes * threads < cores;
}

// Returns e.g. "off: 2 processes x 1 threads >= 2 cores" or "on: 2 processes x 4 threads < 16
// cores".
inline std::string DescribeOverlap(int processes, int threads, int cores) {
  const bool on = OverlapHelps(processes, threads, cores);
  return std::string(on ? "on: " : "off: ") + std::to_string(processes) + " processes x " +
         std::to_string(threads) + " threads " + (on ? "< " : ">= ") + std::to_string(cores) +
         " cores";
}

}  // namespace accel

#endif  // ACCEL_COMMON_OVERLAP_H_
