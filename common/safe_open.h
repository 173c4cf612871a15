// Safe creation of files and directories that another local user must not take over: the one
// home of the rules (std + POSIX only, header-only, so libaccel shares it without abseil).
//
//   - a new file is created with openat(…, O_CREAT | O_EXCL | O_NOFOLLOW): never through a
//     symlink someone planted, never into a file someone pre-created;
//   - a file replaced in place is written to a fresh temporary file beside it (O_EXCL, a name
//     nobody can guess) and renamed over the old one;
//   - a file or directory that already exists is used only when it is a real one (not a
//     symlink) owned by this user and writable by nobody else (OwnershipProblem).
// The launcher's absl wrappers (private directories, the job file, reading owned files) are in
// common/safe_file.h.
#ifndef ACCEL_COMMON_SAFE_OPEN_H_
#define ACCEL_COMMON_SAFE_OPEN_H_

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

namespace accel::safe_open {

// Opens the new file `name` under `dirfd` (AT_FDCWD: relative to the working directory):
// O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC plus `flags`. Returns the fd, or -1 with errno
// (EEXIST when anything, a symlink included, has that name).
inline int CreateNewAt(int dirfd, const char* name, int flags, mode_t mode) {
  int fd;
  do {
    fd = ::openat(dirfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  if (fd >= 0) ::fchmod(fd, mode);  // exact, whatever the umask
  return fd;
}

// Returns "" when `st` is a real directory (want_dir) or regular file owned by this process's
// effective user that nobody else may write (and, for `private_mode`, nobody else may read);
// otherwise why not, e.g. "owned by uid 1001, not by you (uid 0)" or "mode 0777".
inline std::string OwnershipProblem(const struct stat& st, bool want_dir, bool private_mode) {
  const bool right_type = want_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (!right_type) return want_dir ? "not a directory" : "not a regular file";
  if (st.st_uid != ::geteuid()) {
    return "owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " +
           std::to_string(::geteuid()) + ")";
  }
  if (!want_dir && st.st_nlink != 1) return "a file with several hard links";
  const mode_t others = private_mode ? 077 : 022;
  if ((st.st_mode & others) != 0) {
    char mode[16];
    std::snprintf(mode, sizeof(mode), "mode %04o", static_cast<unsigned>(st.st_mode & 07777));
    return mode;
  }
  return "";
}

// Opens the existing file `name` under `dirfd` without following a symlink and returns its fd
// when OwnershipProblem finds nothing (`private_mode`: nobody else may read it either); -1 with
// errno otherwise (EACCES: someone else's, or open to others; ELOOP: a symlink). O_NONBLOCK, so a
// planted FIFO cannot block the caller.
inline int OpenOwnedAt(int dirfd, const char* name, int flags, bool private_mode) {
  const int fd = ::openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !OwnershipProblem(st, false, private_mode).empty()) {
    ::close(fd);
    errno = EACCES;
    return -1;
  }
  return fd;
}

// Replaces the content of `path` with `text` (mode `mode`): written to a fresh temporary file
// beside it (a random name, CreateNewAt) and renamed into place, so a reader sees the old or the
// new content, never a part, and nothing anyone planted is written through. Returns 0 or errno.
inline int ReplaceFile(const std::string& path, const std::string& text, mode_t mode) {
  unsigned char random[8];
  if (::getrandom(random, sizeof(random), 0) != static_cast<ssize_t>(sizeof(random))) {
    return errno != 0 ? errno : EIO;
  }
  std::string tmp = path + ".tmp.";
  for (unsigned char c : random) {
    static const char kHex[] = "0123456789abcdef";
    tmp += kHex[c >> 4];
    tmp += kHex[c & 15];
  }
  const int fd = CreateNewAt(AT_FDCWD, tmp.c_str(), O_WRONLY, mode);
  if (fd < 0) return errno;
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(tmp.c_str());
      return err;
    }
    done += static_cast<std::size_t>(n);
  }
  const int synced = ::fsync(fd) == 0 ? 0 : errno;
  if (::close(fd) != 0 || synced != 0) {
    const int err = synced != 0 ? synced : errno;
    ::unlink(tmp.c_str());
    return err;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return err;
  }
  return 0;
}

}  // namespace accel::safe_open

#endif  // ACCEL_COMMON_SAFE_OPEN_H_
