// Failure report: which workers failed, root cause (the earliest failure) first.
#ifndef ACCEL_LAUNCHER_PROCESS_FAILURE_REPORT_H_
#define ACCEL_LAUNCHER_PROCESS_FAILURE_REPORT_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "launcher/process/subprocess.h"

namespace accel::launcher {

// A failed worker, or (rank < 0) a machine that failed as a whole: lost, interrupted, its
// rendezvous host gone; `detail` then says how ("machine 1 lost: no heartbeat for 3.0 s").
struct WorkerFailure {
  int machine_rank = 0;
  std::string host;
  int rank = 0;        // global rank; < 0: the machine itself
  int local_rank = 0;  // < 0: unknown (a rank of another machine)
  pid_t pid = 0;       // 0: unknown
  ExitStatus exit;
  absl::Time time = absl::InfinitePast();  // when the launcher saw it end (wall clock)
  std::string error_message;               // ACCEL_ERROR_FILE's "message", if written
  std::string detail;                      // e.g. "stalled at step 12 for 5s" (hang detection)
  std::vector<std::string> stderr_tail;    // last lines of its stderr, oldest first
  // A local rank that the job's agreed hang verdict names (the same verdict on every machine:
  // HangWatch::agreed()); under elastic membership its machine is evicted.
  bool agreed_hang = false;
};

// Returns the "message" of the JSON error file {message, time, rank} at `path`, or "" when the
// file is absent, empty or has no message.
std::string ReadErrorFileMessage(const std::string& path);

// Returns the JSON string value of `key` in the flat JSON object `json`, or "" when absent.
std::string JsonStringField(absl::string_view json, absl::string_view key);

// Sorts `failures` by time, root cause first.
void SortRootCauseFirst(std::vector<WorkerFailure>* failures);

// Returns the report table for failures sorted root cause first; `title` heads it. A machine's
// row (rank < 0) is its message, e.g. "root cause machine 1 lost: no heartbeat for 3.0 s".
std::string FormatFailureReport(const std::vector<WorkerFailure>& failures,
                                absl::string_view title);

// Returns the row text of a machine's failure (rank < 0): its detail when that names the
// machine already, else "machine M (host H): <detail>".
std::string DescribeMachineCause(const WorkerFailure& failure);

// Returns one line naming `failure` and how it ended, for messages such as a restart's cause:
// "rank 3 on machine 1 (host b): signal 9 (SIGKILL)", a hang's detail, or a machine's row.
std::string DescribeCause(const WorkerFailure& failure);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_PROCESS_FAILURE_REPORT_H_
