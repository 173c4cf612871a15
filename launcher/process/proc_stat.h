// What /proc says about a worker's process tree: whether a process of it is stopped, how much
// CPU time the tree has used and how many bytes it read and wrote. Hang detection reads it for
// every rank, libaccel or not.
#ifndef ACCEL_LAUNCHER_PROCESS_PROC_STAT_H_
#define ACCEL_LAUNCHER_PROCESS_PROC_STAT_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace accel::launcher {

// One line of /proc/<pid>/stat, the fields hang detection uses.
struct ProcStat {
  char state = '?';  // R, S, D, T (stopped), t (traced), Z, ...
  // utime + stime + cutime + cstime, in clock ticks (sysconf(_SC_CLK_TCK)).
  std::uint64_t cpu_ticks = 0;
};

// Parses the text of /proc/<pid>/stat (the command name may hold spaces and parentheses).
std::optional<ProcStat> ParseProcStat(const std::string& text);

// Returns /proc/<pid>/stat of `pid`, nullopt when the process is gone.
std::optional<ProcStat> ReadProcStat(pid_t pid);

// Returns rchar + wchar of the text of /proc/<pid>/io (bytes the process read and wrote through
// any file, pipe or socket), nullopt when neither is there.
std::optional<std::uint64_t> ParseProcIo(const std::string& text);

struct ProcessTreeSample {
  bool alive = false;
  bool stopped = false;  // some process of the tree is stopped (state T or t)
  std::uint64_t cpu_ticks = 0;
  std::uint64_t io_bytes = 0;  // ParseProcIo summed over the tree (0 where unreadable)
};

// Returns the state, CPU time and I/O bytes of `pid` and its live descendants (the children of each
// process's main thread, /proc/<pid>/task/<pid>/children), so a worker that runs its work in a
// child process is still seen.
ProcessTreeSample SampleProcessTree(pid_t pid);

// Returns clock ticks per second (sysconf(_SC_CLK_TCK), 100 when unknown).
double ClockTicksPerSecond();

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_PROCESS_PROC_STAT_H_
