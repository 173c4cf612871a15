// The worker's error report for the launcher: when a worker dies, the launcher's
// failure table shows the message that $ACCEL_ERROR_FILE holds, as JSON
// {"message": "...", "time": <unix seconds>, "rank": N}.
//
// An Accelerator installs a std::terminate handler that records any exception escaping main()
// before the process aborts. RunWorker is the explicit form for programs that prefer an exit code.
#ifndef ACCEL_ERROR_FILE_H_
#define ACCEL_ERROR_FILE_H_

#include <functional>
#include <string>

namespace accel {

// Writes `message` to $ACCEL_ERROR_FILE (created or replaced). Returns false when the variable is
// unset or the file cannot be written. Never throws.
bool RecordError(const std::string& message) noexcept;

// Runs `fn` and returns its result; if it throws, records what() with RecordError, prints
// "[accel] rank N: <what>" to stderr and returns 1 (accel-launch's "a worker failed").
int RunWorker(const std::function<int()>& fn);

// Installs (once per process) the std::terminate handler described above. Called by Accelerator.
void InstallTerminateHandler();

}  // namespace accel

#endif  // ACCEL_ERROR_FILE_H_
