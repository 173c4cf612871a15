// Checks on paths a launch will write, made before anything is launched so that `--dry_run` and
// `config validate` find what the launch itself would fail on.
#ifndef ACCEL_LAUNCHER_CONFIG_PATHS_H_
#define ACCEL_LAUNCHER_CONFIG_PATHS_H_

#include <string>

#include "absl/status/status.h"

namespace accel::launcher {

// Returns OK when `dir` is a writable directory, or when it is missing and could be created:
// each missing level is created and removed again (so a read-only file system or a parent that
// is a file is found as it would be at launch), leaving the file system as it was. Otherwise the
// cause, e.g. "cannot create /data/logs: Permission denied" or "/etc/hostname is not a
// directory".
absl::Status CheckDirectoryCreatable(const std::string& dir);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_PATHS_H_
