// The launcher's side of common/safe_open.h, with absl::Status errors that name the path: private
// directories (the run directory, its attempt and rank directories), new files in them, the job
// file written by rename, and files read back only when this user owns them.
//
// A directory given by path (MakeOwnDir, OpenOwnDir) is opened with O_NOFOLLOW and kept as an fd;
// everything under it is made and opened relative to that fd (mkdirat, openat, renameat), so a
// symlink or a directory another user planted is never followed.
#ifndef ACCEL_COMMON_SAFE_FILE_H_
#define ACCEL_COMMON_SAFE_FILE_H_

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace accel {

// Creates directory `path` with `mode` (its parent must exist), or accepts an existing one only
// when it is a real directory owned by this user with exactly `mode`; returns it opened
// (O_DIRECTORY | O_NOFOLLOW). Otherwise FAILED_PRECONDITION naming the path, what is wrong
// ("owned by uid 1001", "mode 0777", "a symbolic link") and what to do.
absl::StatusOr<UniqueFd> MakeOwnDir(const std::string& path, mode_t mode);

// Creates every missing directory of `path` with `mode` (existing ones are left as they are:
// the user's own log_dir, for example). Errors name the directory.
absl::Status MakeParentDirs(const std::string& path, mode_t mode);

// Creates a fresh directory "<prefix>XXXXXX" (mkdtemp: mode 0700, a name nobody can predict)
// and returns its path.
absl::StatusOr<std::string> MakeFreshDir(const std::string& prefix);

// Opens the existing directory `path` (O_NOFOLLOW) when it is owned by this user and nobody else
// may write it; PERMISSION_DENIED saying why not, NOT_FOUND when it does not exist.
absl::StatusOr<UniqueFd> OpenOwnDir(const std::string& path);

// Creates the directories of `relative` ("attempt_0/rank_3") under `dirfd` with `mode`; an
// existing one must be a real directory of this user that nobody else may write. Returns the last,
// opened.
absl::StatusOr<UniqueFd> MakeDirsAt(int dirfd, const std::string& relative, mode_t mode,
                                    const std::string& shown_as);

// Creates the new file `name` under `dirfd` (O_CREAT | O_EXCL | O_NOFOLLOW, `mode` exactly).
// `replace`: a file of that name is removed first (an old run's log in our own directory).
// Errors name `shown_as`.
absl::StatusOr<UniqueFd> CreateFileAt(int dirfd, const std::string& name, int flags, mode_t mode,
                                      bool replace, const std::string& shown_as);

// Opens `name` under `dirfd` for appending, creating it when missing; an existing one must be
// a regular file of this user that nobody else may write.
absl::StatusOr<UniqueFd> OpenAppendAt(int dirfd, const std::string& name, mode_t mode,
                                      const std::string& shown_as);

// Writes `text` to `name` under `dirfd` (mode `mode`) through a fresh temporary file renamed
// into place.
absl::Status WriteFileAt(int dirfd, const std::string& name, const std::string& text, mode_t mode,
                         const std::string& shown_as);

// Returns the content of `name` under `dirfd` (at most `max_bytes`) when it is a regular file of
// this user that nobody else may write (`private_mode`: nor read); else PERMISSION_DENIED saying
// why, NOT_FOUND when missing. A symlink is refused.
absl::StatusOr<std::string> ReadOwnFileAt(int dirfd, const std::string& name, bool private_mode,
                                          std::size_t max_bytes, const std::string& shown_as);

}  // namespace accel

#endif  // ACCEL_COMMON_SAFE_FILE_H_
