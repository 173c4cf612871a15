#include "common/live_line.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace accel {
namespace {

constexpr char kErase[] = "\r\033[K";

struct State {
  absl::Mutex mu;
  std::string line ABSL_GUARDED_BY(mu);  // "" = none shown
};

State& Live() {
  static State* const state = new State();  // never destroyed: used until _exit
  return *state;
}

void WriteStderr(absl::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the console is gone: best effort
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::size_t TerminalWidth() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1) return size.ws_col - 1;
  return 79;
}

}  // namespace

bool LiveLineAvailable() { return ::isatty(STDERR_FILENO) == 1; }

void ShowLiveLine(absl::string_view text) {
  if (!LiveLineAvailable()) return;
  State& s = Live();
  absl::MutexLock lock(&s.mu);
  s.line = std::string(text.substr(0, TerminalWidth()));
  WriteStderr(std::string(kErase) + s.line);
}

void ClearLiveLine() {
  State& s = Live();
  absl::MutexLock lock(&s.mu);
  if (s.line.empty()) return;
  WriteStderr(kErase);
  s.line.clear();
}

void WriteAboveLiveLine(const std::function<void()>& write) {
  State& s = Live();
  absl::MutexLock lock(&s.mu);
  if (!s.line.empty()) WriteStderr(kErase);
  write();
  if (!s.line.empty()) WriteStderr(s.line);
}

}  // namespace accel
