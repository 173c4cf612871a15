#include "common/random.h"

#include <sys/random.h>

#include <cerrno>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/string_view.h"

namespace accel {

absl::StatusOr<std::string> RandomHex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  std::size_t filled = 0;
  while (filled < raw.size()) {
    const ssize_t n = ::getrandom(raw.data() + filled, raw.size() - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, "getrandom");
    filled += static_cast<std::size_t>(n);
  }
  return absl::BytesToHexString(raw);
}

}  // namespace accel
