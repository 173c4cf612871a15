#include "rendezvous/grpc/token.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/env_contract.h"
#include "common/status_macros.h"
#include "rendezvous/grpc/auth.h"

namespace accel::rendezvous {

absl::StatusOr<std::string> GenerateToken() {
  char bytes[32];
  std::size_t filled = 0;
  while (filled < sizeof(bytes)) {
    const ssize_t n = ::getrandom(bytes + filled, sizeof(bytes) - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, "generate rendezvous token: getrandom");
    filled += static_cast<std::size_t>(n);
  }
  return absl::BytesToHexString(absl::string_view(bytes, sizeof(bytes)));
}

absl::StatusOr<std::string> LoadToken(const std::string& token_file) {
  if (token_file.empty()) {
    const char* env = std::getenv(env::kRdzvToken);
    return std::string(env == nullptr ? "" : env);
  }
  absl::StatusOr<std::string> text = ReadFileToString(token_file);
  if (!text.ok()) return Annotate(text.status(), "read rdzv_token_file");
  std::string line = text->substr(0, text->find('\n'));
  absl::StripAsciiWhitespace(&line);
  if (line.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("read rdzv_token_file ", token_file, ": the file holds no token"));
  }
  return line;
}

}  // namespace accel::rendezvous
