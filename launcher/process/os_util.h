// Small OS helpers of the agent: ids, host name, free ports, run directories.
#ifndef ACCEL_LAUNCHER_PROCESS_OS_UTIL_H_
#define ACCEL_LAUNCHER_PROCESS_OS_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace accel::launcher {

// Returns `bytes` random bytes from getrandom(2), hex-encoded.
std::string RandomHex(int bytes);

// Returns this machine's host name ("localhost" when it cannot be read).
std::string HostName();

// Returns a TCP port that was free on `host` a moment ago (bound to port 0, then closed).
absl::StatusOr<int> PickFreePort(const std::string& host);

// Returns `environ` as a vector.
std::vector<std::string> CurrentEnvironment();

// Removes `path` and everything below it; errors are ignored (cleanup of our own temp files).
void RemoveTree(const std::string& path);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_PROCESS_OS_UTIL_H_
