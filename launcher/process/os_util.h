// Small OS helpers of the agent: host name, environment, run directories. Random ids are
// common/random.h's RandomHex, free ports common/net.h's PickFreePort.
#ifndef ACCEL_LAUNCHER_PROCESS_OS_UTIL_H_
#define ACCEL_LAUNCHER_PROCESS_OS_UTIL_H_

#include <string>
#include <vector>

namespace accel::launcher {

// Returns this machine's host name ("localhost" when it cannot be read).
std::string HostName();

// Returns `environ` as a vector.
std::vector<std::string> CurrentEnvironment();

// Returns the program name of process `pid` (/proc/PID/comm), or "" when it is gone or unknown.
std::string ProcessName(int pid);

// Removes `path` and everything below it; errors are ignored (cleanup of our own temp files).
void RemoveTree(const std::string& path);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_PROCESS_OS_UTIL_H_
