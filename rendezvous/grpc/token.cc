#include "rendezvous/grpc/token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/random.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"

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

absl::StatusOr<TokenFile> ReadTokenFile(const std::string& path, bool strict) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd) return absl::ErrnoToStatus(errno, absl::StrCat("read rdzv_token_file ", path));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("read rdzv_token_file ", path));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("read rdzv_token_file ", path, ": not a regular file"));
  }
  TokenFile out;
  if ((st.st_mode & 077) != 0) {
    const std::string problem = absl::StrFormat(
        "rdzv_token_file %s may be read by group or others (mode %04o): anyone who reads it can "
        "join the job, read and write its store and abort it; run chmod 600 %s",
        path, st.st_mode & 07777, path);
    if (strict) return absl::FailedPreconditionError(absl::StrCat(problem, " (refused: strict)"));
    out.warning = absl::StrCat(problem, " (refused when strict: true)");
  }
  absl::StatusOr<std::string> text = ReadAll(fd.get(), path);
  if (!text.ok()) return text.status();
  std::string line = text->substr(0, text->find('\n'));
  absl::StripAsciiWhitespace(&line);
  if (line.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("read rdzv_token_file ", path, ": the file holds no token"));
  }
  out.token = std::move(line);
  return out;
}

absl::StatusOr<std::string> WriteTokenFile(const std::string& path) {
  absl::StatusOr<TokenFile> existing = ReadTokenFile(path, /*strict=*/false);
  if (existing.ok()) {
    if (::chmod(path.c_str(), 0600) != 0) {
      return absl::ErrnoToStatus(errno, absl::StrCat("chmod 600 ", path));
    }
    return existing->token;
  }
  // Only a missing or empty file is replaced; anything else (not ours to read) is an error.
  if (!absl::IsNotFound(existing.status()) && !absl::IsInvalidArgument(existing.status())) {
    return existing.status();
  }
  absl::StatusOr<std::string> token = GenerateToken();
  if (!token.ok()) return token.status();
  const std::string temp = absl::StrCat(path, ".tmp.", ::getpid());
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return absl::ErrnoToStatus(errno, absl::StrCat("create ", temp));
  const std::string text = *token + "\n";
  // The umask cannot widen 0600, but fchmod makes the mode exact whatever the umask.
  const bool written =
      ::fchmod(fd.get(), 0600) == 0 &&
      ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
      ::fsync(fd.get()) == 0;
  const int err = errno;
  fd.reset();
  if (!written || ::rename(temp.c_str(), path.c_str()) != 0) {
    const int rename_err = written ? errno : err;
    ::unlink(temp.c_str());
    return absl::ErrnoToStatus(rename_err, absl::StrCat("write token file ", path));
  }
  return token;
}

}  // namespace accel::rendezvous
