// What every worker execs, from the program words of the command line, as `accelerate launch`
// and torchrun decide it: PROGRAM.py runs under the Python interpreter (the file need not be
// executable), -m MODULE runs `python -m MODULE`, --no_python execs PROGRAM as it is, torchrun's
// --run_path runs PROGRAM under Python; anything else is exec'ed directly (train.bin).
#ifndef ACCEL_LAUNCHER_AGENT_COMMAND_H_
#define ACCEL_LAUNCHER_AGENT_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace accel::launcher {

struct ProgramOptions {
  bool module = false;             // -m
  bool no_python = false;          // --no_python
  bool run_path = false;           // --run_path
  std::string python = "python3";  // the interpreter (config key `python`), looked up in PATH
};

struct WorkerCommand {
  std::string path;               // what execve runs
  std::vector<std::string> argv;  // argv[0] included, e.g. {"python3", "train.py", "--lr", "1"}
  // It runs Python: PROGRAM.py, -m, --run_path, or a Python interpreter as the program (never
  // with --no_python). Such a worker gets the Python progress module (python_progress.h).
  bool python = false;
};

// Returns the command for `program` (the program word and its arguments, as given). The same
// errors for a launch and a --dry_run: INVALID_ARGUMENT when there is no program or -m comes
// with --no_python; NOT_FOUND / PERMISSION_DENIED naming the program (or the interpreter) that
// cannot be run, e.g. "resolve program train.py: No such file or directory".
absl::StatusOr<WorkerCommand> ResolveWorkerCommand(const std::vector<std::string>& program,
                                                   const ProgramOptions& options,
                                                   absl::string_view path_env);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_COMMAND_H_
