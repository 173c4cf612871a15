#include "examples/train_trace.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

namespace accel::examples {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string Format(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string Format(const char* format, ...) {
  char buffer[256];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  return std::string(buffer, n < 0 ? 0 : std::min<std::size_t>(n, sizeof(buffer) - 1));
}

std::string Hex(std::uint64_t hash) { return Format("%016" PRIx64, hash); }

}  // namespace

std::uint64_t Fnv1a(const void* data, std::size_t size, std::uint64_t hash) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 1099511628211ULL;
  }
  return hash;
}

TrainTrace::TrainTrace(const std::string& path, int pid) {
  if (!path.empty()) out_.open(path + "." + std::to_string(pid), std::ios::app);
}

void TrainTrace::Write(const std::string& line) {
  if (out_.is_open()) out_ << line << std::endl;  // flushed: a killed process leaves whole lines
}

void TrainTrace::Start(const TracePoint& at, int pid, std::uint64_t params) {
  Write(Format("start gen %" PRId64 " world %d rank %d step %" PRId64 " epoch %" PRId64
               " pid %d time %.6f params ",
               at.generation, at.world, at.rank, at.step, at.epoch, pid, Now()) +
        Hex(params));
}

void TrainTrace::Fetch(const TracePoint& at, const std::vector<std::int64_t>& samples,
                       std::int64_t padding) {
  if (!out_.is_open()) return;
  std::string line =
      Format("fetch step %" PRId64 " gen %" PRId64 " epoch %" PRId64 " rank %d samples",
             at.step + 1, at.generation, at.epoch, at.rank);
  for (std::int64_t i : samples) line += " " + std::to_string(i);
  Write(line + Format(" pad %" PRId64, padding));
}

void TrainTrace::Step(const TracePoint& at, bool with_params, std::uint64_t params) {
  std::string line = Format("step %" PRId64 " gen %" PRId64 " world %d rank %d time %.6f", at.step,
                            at.generation, at.world, at.rank, Now());
  Write(with_params ? line + " params " + Hex(params) : line);
}

void TrainTrace::Error(const TracePoint& at) {
  Write(Format("error gen %" PRId64 " step %" PRId64 " time %.6f", at.generation, at.step, Now()));
}

void TrainTrace::Regroup(const TracePoint& at, std::uint64_t params) {
  Write(Format("regroup gen %" PRId64 " world %d rank %d step %" PRId64 " epoch %" PRId64
               " time %.6f params ",
               at.generation, at.world, at.rank, at.step, at.epoch, Now()) +
        Hex(params));
}

void TrainTrace::End(const TracePoint& at, std::uint64_t params) {
  Write(Format("end step %" PRId64 " gen %" PRId64 " world %d rank %d time %.6f params ", at.step,
               at.generation, at.world, at.rank, Now()) +
        Hex(params));
}

std::int64_t TrainTrace::Padding(std::int64_t size, std::int64_t start, int world, int rank,
                                 std::int64_t taken, std::int64_t count) {
  std::int64_t padding = 0;
  for (std::int64_t k = taken; k < taken + count; ++k) {
    if (start + rank + k * world >= size) ++padding;
  }
  return padding;
}

}  // namespace accel::examples
