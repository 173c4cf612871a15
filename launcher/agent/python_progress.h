// The Python progress module (launcher/python/): what makes an unmodified Python worker write the
// progress record libaccel writes (common/progress_record.h), so that its steps, stragglers and
// hangs show as a libaccel program's do. The launcher carries the module's files inside itself
// (launcher/python/embed.cmake), writes them into the run directory, and puts that directory
// first on the worker's PYTHONPATH (worker_env.h); its sitecustomize takes itself off again and
// runs the program's own sitecustomize. On when the worker runs Python (PROGRAM.py, -m, a Python
// interpreter as the program; never with --no_python), the worker has a progress file, and
// python_progress is true.
#ifndef ACCEL_LAUNCHER_AGENT_PYTHON_PROGRESS_H_
#define ACCEL_LAUNCHER_AGENT_PYTHON_PROGRESS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace accel::launcher {

// Returns true when `program` (a program word as given, or a path) names a Python interpreter:
// its file name is python, python3, python3.11, ... (not python3-config).
bool IsPythonInterpreter(absl::string_view program);

// Writes the module's files into `dir` (created, with its parents; files replaced).
absl::Status WritePythonProgressModule(const std::string& dir);

// Returns the worker's PYTHONPATH: `module_dir` first, then `inherited` (the launcher's own
// PYTHONPATH; null when unset), in the form sitecustomize.py undoes: "<dir>" when unset,
// "<dir>:<inherited>" when set, even to "".
std::string PythonPathWithModule(const std::string& module_dir, const char* inherited);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_PYTHON_PROGRESS_H_
