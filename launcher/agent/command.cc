#include "launcher/agent/command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "launcher/agent/python_progress.h"
#include "launcher/process/subprocess.h"

namespace accel::launcher {
namespace {

// Returns OK when `script` is a regular file this process can read (Python reads it; it need
// not be executable).
absl::Status CheckScript(const std::string& script) {
  struct stat st {};
  int err = 0;
  if (::stat(script.c_str(), &st) != 0) {
    err = errno;
  } else if (S_ISDIR(st.st_mode)) {
    err = EISDIR;
  } else if (::access(script.c_str(), R_OK) != 0) {
    err = errno;
  }
  if (err == 0) return absl::OkStatus();
  return absl::ErrnoToStatus(err, absl::StrCat("resolve program ", script));
}

absl::StatusOr<std::string> ResolvePython(const ProgramOptions& options, absl::string_view why,
                                          absl::string_view path_env) {
  absl::StatusOr<std::string> python = ResolveProgram(options.python, path_env);
  if (python.ok()) return python;
  return absl::Status(python.status().code(),
                      absl::StrCat(python.status().message(), " (the Python interpreter for ", why,
                                   "; set python or --python)"));
}

}  // namespace

absl::StatusOr<WorkerCommand> ResolveWorkerCommand(const std::vector<std::string>& program,
                                                   const ProgramOptions& options,
                                                   absl::string_view path_env) {
  if (program.empty() || program.front().empty()) {
    return absl::InvalidArgumentError("resolve program: no program given");
  }
  if (options.module && options.no_python) {
    return absl::InvalidArgumentError(
        "resolve program: -m/--module and --no_python cannot be used together");
  }
  const std::string& first = program.front();
  WorkerCommand command;
  if (options.module) {
    absl::StatusOr<std::string> python =
        ResolvePython(options, absl::StrCat("-m ", first), path_env);
    if (!python.ok()) return python.status();
    command.path = *python;
    command.argv = {options.python, "-m"};
    command.python = true;
  } else if (options.run_path || (absl::EndsWith(first, ".py") && !options.no_python)) {
    if (absl::Status script = CheckScript(first); !script.ok()) return script;
    absl::StatusOr<std::string> python = ResolvePython(options, first, path_env);
    if (!python.ok()) return python.status();
    command.path = *python;
    command.argv = {options.python};
    command.python = true;
  } else {
    absl::StatusOr<std::string> path = ResolveProgram(first, path_env);
    if (!path.ok()) return path.status();
    command.path = *path;
    command.python = !options.no_python && IsPythonInterpreter(first);
  }
  command.argv.insert(command.argv.end(), program.begin(), program.end());
  return command;
}

}  // namespace accel::launcher
