// train.bin --trace PATH: a record of everything an elastic soak checks, one file per process
// (PATH.<pid>: ranks change at a membership change, processes do not), one line per event, each
// written whole and flushed so a process killed with SIGKILL leaves only complete lines:
//
//   start gen G world W rank R step S epoch E pid P time T params H
//       the training loop begins (S > 0: the process joined a running job and holds its state)
//   fetch step S gen G epoch E rank R samples I... pad P
//       a batch fetched for step S (step_count() + 1); the last P samples listed are the
//       sampler's wrap-around padding (torch's DistributedSampler), the others real samples
//   step S gen G world W rank R time T [params H]
//       step S completed (acc.step returned on a sync micro-step)
//   error gen G step S time T
//       a collective threw (the last completed step is S); recover() follows
//   regroup gen G world W rank R step S epoch E time T params H
//       recover() returned: generation G, continuing after step S
//   end step S gen G world W rank R time T params H
//
// T: seconds since the epoch (namespaces on one host share the clock). H: 16 hex digits, FNV-1a
// over the bytes of every parameter in order, so equal hashes mean bitwise equal replicas.
// tests/faults/soak_check.py reads these files. No LibTorch here (the hash is fed bytes).
#ifndef ACCEL_EXAMPLES_TRAIN_TRACE_H_
#define ACCEL_EXAMPLES_TRAIN_TRACE_H_

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace accel::examples {

// FNV-1a 64 over `size` bytes, continuing from `hash` (start with kFnvOffset).
constexpr std::uint64_t kFnvOffset = 14695981039346656037ULL;
std::uint64_t Fnv1a(const void* data, std::size_t size, std::uint64_t hash);

// Where a process stands when it writes a line.
struct TracePoint {
  std::int64_t generation = 0;
  int world = 1;
  int rank = 0;
  std::int64_t step = 0;  // completed steps
  std::int64_t epoch = 0;
};

class TrainTrace {
 public:
  // Nothing is written when `path` is empty; otherwise appends to "<path>.<pid>".
  TrainTrace(const std::string& path, int pid);
  bool enabled() const { return out_.is_open(); }
  // The line kinds above; `params` is the hash (ignored by Step when `with_params` is false).
  void Start(const TracePoint& at, int pid, std::uint64_t params);
  void Fetch(const TracePoint& at, const std::vector<std::int64_t>& samples, std::int64_t padding);
  void Step(const TracePoint& at, bool with_params, std::uint64_t params);
  void Error(const TracePoint& at);
  void Regroup(const TracePoint& at, std::uint64_t params);
  void End(const TracePoint& at, std::uint64_t params);

  // How many of `count` samples, the batch taken after `taken` samples of this rank's pass, are
  // wrap-around padding: the pass starts at position `start` of the epoch's order of `size`
  // samples and rank `rank` of `world` takes positions start + rank + k * world.
  static std::int64_t Padding(std::int64_t size, std::int64_t start, int world, int rank,
                              std::int64_t taken, std::int64_t count);

 private:
  void Write(const std::string& line);
  std::ofstream out_;
};

}  // namespace accel::examples

#endif  // ACCEL_EXAMPLES_TRAIN_TRACE_H_
