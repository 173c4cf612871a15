#include "common/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/random.h"
#include "common/safe_open.h"

namespace accel {
namespace {

absl::Status Errno(int err, const std::string& what) { return absl::ErrnoToStatus(err, what); }

absl::Status NotOurs(const std::string& path, const std::string& problem) {
  return absl::PermissionDeniedError(
      absl::StrCat(path, " is ", problem, ": refused (another user may have made it)"));
}

// Says what `name` under `dirfd` is when opening it as a directory without following a symlink
// failed with ELOOP or ENOTDIR (Linux gives ENOTDIR for a symlink under O_DIRECTORY): "" when
// neither applies.
std::string NotADirectory(int err, int dirfd, const std::string& name) {
  if (err != ELOOP && err != ENOTDIR) return "";
  struct stat st {};
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
    return "a symbolic link";
  }
  return "not a directory";
}

}  // namespace

absl::StatusOr<UniqueFd> MakeOwnDir(const std::string& path, mode_t mode) {
  const bool made = ::mkdir(path.c_str(), mode) == 0;
  if (!made && errno != EEXIST) return Errno(errno, absl::StrCat("create directory ", path));
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    if (std::string what = NotADirectory(err, AT_FDCWD, path); !what.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("run directory ", path, " already exists and is ", what,
                       ": refused; remove it, or choose another run id or log_dir"));
    }
    return Errno(err, absl::StrCat("open directory ", path));
  }
  if (made) ::fchmod(fd.get(), mode);  // exact, whatever the umask
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Errno(errno, absl::StrCat("stat ", path));
  std::string problem = safe_open::OwnershipProblem(st, /*want_dir=*/true, /*private_mode=*/false);
  if (problem.empty() && (st.st_mode & 07777) != mode) {
    problem = absl::StrFormat("mode %04o, not %04o", st.st_mode & 07777, mode);
  }
  if (!problem.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run directory ", path, " already exists and is ", problem,
        ": refused (another user may have made it to read or forge the job's files); remove it, "
        "or choose another run id or log_dir"));
  }
  return fd;
}

absl::Status MakeParentDirs(const std::string& path, mode_t mode) {
  for (std::size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    const std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
      return Errno(errno, absl::StrCat("create directory ", prefix));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> MakeFreshDir(const std::string& prefix) {
  std::string name = absl::StrCat(prefix, "XXXXXX");
  if (::mkdtemp(name.data()) == nullptr) {
    return Errno(errno, absl::StrCat("create directory ", prefix, "XXXXXX"));
  }
  return name;
}

absl::StatusOr<UniqueFd> OpenOwnDir(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    if (std::string what = NotADirectory(err, AT_FDCWD, path); !what.empty()) {
      return NotOurs(path, what);
    }
    return Errno(err, absl::StrCat("open directory ", path));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Errno(errno, absl::StrCat("stat ", path));
  const std::string problem = safe_open::OwnershipProblem(st, true, /*private_mode=*/false);
  if (!problem.empty()) return NotOurs(path, problem);
  return fd;
}

absl::StatusOr<UniqueFd> MakeDirsAt(int dirfd, const std::string& relative, mode_t mode,
                                    const std::string& shown_as) {
  UniqueFd current(::fcntl(dirfd, F_DUPFD_CLOEXEC, 0));
  if (!current) return Errno(errno, absl::StrCat("open directory ", shown_as));
  std::string so_far = shown_as;
  for (absl::string_view part : absl::StrSplit(relative, '/', absl::SkipEmpty())) {
    const std::string name(part);
    absl::StrAppend(&so_far, "/", name);
    const bool made = ::mkdirat(current.get(), name.c_str(), mode) == 0;
    if (!made && errno != EEXIST) return Errno(errno, absl::StrCat("create directory ", so_far));
    UniqueFd next(
        ::openat(current.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) {
      const int err = errno;
      if (std::string what = NotADirectory(err, current.get(), name); !what.empty()) {
        return NotOurs(so_far, what);
      }
      return Errno(err, absl::StrCat("open directory ", so_far));
    }
    if (made) ::fchmod(next.get(), mode);
    struct stat st {};
    if (::fstat(next.get(), &st) != 0) return Errno(errno, absl::StrCat("stat ", so_far));
    const std::string problem = safe_open::OwnershipProblem(st, true, /*private_mode=*/false);
    if (!problem.empty()) return NotOurs(so_far, problem);
    current = std::move(next);
  }
  return current;
}

absl::StatusOr<UniqueFd> CreateFileAt(int dirfd, const std::string& name, int flags, mode_t mode,
                                      bool replace, const std::string& shown_as) {
  if (replace) ::unlinkat(dirfd, name.c_str(), 0);
  UniqueFd fd(safe_open::CreateNewAt(dirfd, name.c_str(), flags, mode));
  if (!fd) {
    if (errno == EEXIST) {
      return absl::AlreadyExistsError(absl::StrCat(
          "create ", shown_as, ": something already has that name (refused: a new file only)"));
    }
    return Errno(errno, absl::StrCat("create ", shown_as));
  }
  return fd;
}

absl::StatusOr<UniqueFd> OpenAppendAt(int dirfd, const std::string& name, mode_t mode,
                                      const std::string& shown_as) {
  UniqueFd fd(safe_open::CreateNewAt(dirfd, name.c_str(), O_WRONLY | O_APPEND, mode));
  if (fd) return fd;
  if (errno != EEXIST) return Errno(errno, absl::StrCat("create ", shown_as));
  fd.reset(safe_open::OpenOwnedAt(dirfd, name.c_str(), O_WRONLY | O_APPEND, false));
  if (!fd) {
    return absl::PermissionDeniedError(absl::StrCat(
        "open ", shown_as, ": not a regular file of yours that only you may write (refused)"));
  }
  return fd;
}

absl::Status WriteFileAt(int dirfd, const std::string& name, const std::string& text, mode_t mode,
                         const std::string& shown_as) {
  absl::StatusOr<std::string> suffix = RandomHex(8);
  if (!suffix.ok()) return suffix.status();
  const std::string tmp = absl::StrCat(".", name, ".tmp.", *suffix);
  absl::StatusOr<UniqueFd> fd = CreateFileAt(dirfd, tmp, O_WRONLY, mode, false, shown_as);
  if (!fd.ok()) return fd.status();
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd->get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::unlinkat(dirfd, tmp.c_str(), 0);
      return Errno(err, absl::StrCat("write ", shown_as));
    }
    done += static_cast<std::size_t>(n);
  }
  fd->reset();
  if (::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(dirfd, tmp.c_str(), 0);
    return Errno(err, absl::StrCat("write ", shown_as));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadOwnFileAt(int dirfd, const std::string& name, bool private_mode,
                                          std::size_t max_bytes, const std::string& shown_as) {
  UniqueFd fd(
      ::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("no file ", shown_as));
    if (errno == ELOOP) return NotOurs(shown_as, "a symbolic link");
    return Errno(errno, absl::StrCat("read ", shown_as));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Errno(errno, absl::StrCat("stat ", shown_as));
  const std::string problem = safe_open::OwnershipProblem(st, false, private_mode);
  if (!problem.empty()) return NotOurs(shown_as, problem);
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno(errno, absl::StrCat("read ", shown_as));
    if (n == 0) return text;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > max_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("read ", shown_as, ": larger than ", max_bytes, " bytes"));
    }
  }
}

}  // namespace accel
