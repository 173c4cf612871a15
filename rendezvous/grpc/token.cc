#include "rendezvous/grpc/token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/random.h"
#include "common/safe_open.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"
#include "rendezvous/grpc/token_strength.h"

namespace accel::rendezvous {
namespace {

constexpr std::size_t kMaxTokenFileBytes = 4096;

// Reads what `fd` holds, up to kMaxTokenFileBytes.
absl::StatusOr<std::string> ReadAll(int fd, const std::string& path) {
  std::string text;
  char buffer[1024];
  while (text.size() <= kMaxTokenFileBytes) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, absl::StrCat("read rdzv_token_file ", path));
    if (n == 0) return text;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("read rdzv_token_file ", path, ": larger than ", kMaxTokenFileBytes, " bytes"));
}

}  // namespace

absl::StatusOr<std::string> GenerateToken() {
  absl::StatusOr<std::string> token = RandomHex(32);
  if (!token.ok()) return Annotate(token.status(), "generate rendezvous token");
  return token;
}

absl::Status CheckTokenStrength(const std::string& token, const std::string& where) {
  const double bits = EstimateTokenBits(token);
  if (bits >= kMinTokenBits) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "the token in %s is too weak: about %.0f bits of entropy by its length, alphabet and "
      "repeats (at least %.0f are needed; anyone who can reach the rendezvous could guess a "
      "weaker one); run `accel-launch token` to write a random 256-bit token file",
      where, bits, kMinTokenBits));
}

absl::StatusOr<TokenFile> ReadTokenFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd) return absl::ErrnoToStatus(errno, absl::StrCat("read rdzv_token_file ", path));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("read rdzv_token_file ", path));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("read rdzv_token_file ", path, ": not a regular file"));
  }
  if (st.st_uid != ::geteuid()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "rdzv_token_file %s is owned by uid %d, not by you (uid %d): its owner knows the token "
        "and can join the job, read and write its store and abort it (refused); use a token "
        "file of your own (`accel-launch config` writes one)",
        path, st.st_uid, ::geteuid()));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "rdzv_token_file %s may be read by group or others (mode %04o): anyone who reads it can "
        "join the job, read and write its store and abort it (refused); run chmod 600 %s",
        path, st.st_mode & 07777, path));
  }
  absl::StatusOr<std::string> text = ReadAll(fd.get(), path);
  if (!text.ok()) return text.status();
  std::string line = text->substr(0, text->find('\n'));
  absl::StripAsciiWhitespace(&line);
  if (line.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("read rdzv_token_file ", path, ": the file holds no token"));
  }
  if (absl::Status strong = CheckTokenStrength(line, absl::StrCat("rdzv_token_file ", path));
      !strong.ok()) {
    return absl::FailedPreconditionError(strong.message());
  }
  TokenFile out;
  out.token = std::move(line);
  return out;
}

absl::StatusOr<std::string> WriteTokenFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
      st.st_size > 0 && ::chmod(path.c_str(), 0600) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("chmod 600 ", path));
  }
  absl::StatusOr<TokenFile> existing = ReadTokenFile(path);
  if (existing.ok()) return existing->token;
  // Only a missing or empty file is replaced; anything else (not ours, weak) is an error.
  if (!absl::IsNotFound(existing.status()) && !absl::IsInvalidArgument(existing.status())) {
    return existing.status();
  }
  absl::StatusOr<std::string> token = GenerateToken();
  if (!token.ok()) return token.status();
  if (const int err = safe_open::ReplaceFile(path, *token + "\n", 0600); err != 0) {
    return absl::ErrnoToStatus(err, absl::StrCat("write token file ", path));
  }
  return token;
}

}  // namespace accel::rendezvous
