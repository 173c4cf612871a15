#include "launcher/process/proc_stat.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/unique_fd.h"

namespace accel::launcher {
namespace {

constexpr int kMaxTreeProcesses = 4096;  // a fork bomb does not stall the supervisor

// Returns the whole small file at `path` ("" when it cannot be read).
std::string ReadSmallFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return "";
  std::string out;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
    if (out.size() > (1 << 20)) break;
  }
  return out;
}

// Appends the children of `pid`'s main thread to `out` (the children of other threads are left
// out: reading every thread's list costs a read per thread, and torch programs run dozens).
void AppendChildren(pid_t pid, std::vector<pid_t>* out) {
  const std::string children =
      ReadSmallFile(absl::StrCat("/proc/", pid, "/task/", pid, "/children"));
  for (absl::string_view word : absl::StrSplit(children, ' ', absl::SkipEmpty())) {
    int child = 0;
    if (absl::SimpleAtoi(word, &child) && child > 0) out->push_back(child);
  }
}

}  // namespace

std::optional<ProcStat> ParseProcStat(const std::string& text) {
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  // Fields after the name: 3 state, 4 ppid ... 14 utime, 15 stime, 16 cutime, 17 cstime.
  std::string state;
  fields >> state;
  if (state.size() != 1) return std::nullopt;
  std::vector<long long> numbers;
  for (int field = 4; field <= 17; ++field) {
    long long value = 0;
    if (!(fields >> value)) return std::nullopt;
    numbers.push_back(value);
  }
  ProcStat stat;
  stat.state = state[0];
  long long ticks = 0;
  for (int field = 14; field <= 17; ++field) ticks += std::max(0LL, numbers[field - 4]);
  stat.cpu_ticks = static_cast<std::uint64_t>(ticks);
  return stat;
}

std::optional<std::uint64_t> ParseProcIo(const std::string& text) {
  std::uint64_t total = 0;
  bool found = false;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::uint64_t value = 0;
    if ((absl::ConsumePrefix(&line, "rchar:") || absl::ConsumePrefix(&line, "wchar:")) &&
        absl::SimpleAtoi(line, &value)) {
      total += value;
      found = true;
    }
  }
  if (!found) return std::nullopt;
  return total;
}

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  const std::string text = ReadSmallFile(absl::StrCat("/proc/", pid, "/stat"));
  if (text.empty()) return std::nullopt;
  return ParseProcStat(text);
}

ProcessTreeSample SampleProcessTree(pid_t pid) {
  ProcessTreeSample sample;
  std::vector<pid_t> pending = {pid};
  std::set<pid_t> seen;
  while (!pending.empty() && static_cast<int>(seen.size()) < kMaxTreeProcesses) {
    const pid_t next = pending.back();
    pending.pop_back();
    if (!seen.insert(next).second) continue;
    const std::optional<ProcStat> stat = ReadProcStat(next);
    if (!stat.has_value()) continue;
    if (next == pid) sample.alive = stat->state != 'Z' && stat->state != 'X';
    sample.stopped = sample.stopped || stat->state == 'T' || stat->state == 't';
    sample.cpu_ticks += stat->cpu_ticks;
    sample.io_bytes += ParseProcIo(ReadSmallFile(absl::StrCat("/proc/", next, "/io"))).value_or(0);
    AppendChildren(next, &pending);
  }
  return sample;
}

double ClockTicksPerSecond() {
  const long ticks = ::sysconf(_SC_CLK_TCK);
  return ticks > 0 ? static_cast<double>(ticks) : 100.0;
}

}  // namespace accel::launcher
