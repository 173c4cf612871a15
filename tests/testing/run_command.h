// RunCommand: runs a shell command for a test, with a deadline, and captures its output.
// Test-only helper (tests/testing/): uses /bin/sh and coreutils' timeout.
#ifndef ACCEL_TESTS_TESTING_RUN_COMMAND_H_
#define ACCEL_TESTS_TESTING_RUN_COMMAND_H_

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace accel::testing {

struct CommandResult {
  int exit_code = -1;  // 124 when the deadline ran out
  std::string output;  // stdout and stderr, interleaved
};

// Runs `command` under `timeout -s KILL <seconds>`, stdout+stderr captured.
inline CommandResult RunCommand(const std::string& command, int timeout_s = 120) {
  CommandResult result;
  std::string full =
      "timeout -s KILL " + std::to_string(timeout_s) + " sh -c '" + command + "' 2>&1";
  std::FILE* pipe = ::popen(full.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (result.exit_code == 137) result.exit_code = 124;
  return result;
}

// The build and source trees (set by accel_add_test in tests/CMakeLists.txt).
inline std::string BuildDir() {
  const char* dir = std::getenv("ACCEL_BUILD_DIR");
  return dir ? dir : "build";
}
inline std::string SourceDir() {
  const char* dir = std::getenv("ACCEL_SOURCE_DIR");
  return dir ? dir : ".";
}

}  // namespace accel::testing

#endif  // ACCEL_TESTS_TESTING_RUN_COMMAND_H_
