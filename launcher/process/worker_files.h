// WorkerFiles: the per-worker files the launcher reads back after a failure (the error file) or
// while watching for hangs (the progress file). The plan names them; the supervisor reads them.
#ifndef ACCEL_LAUNCHER_PROCESS_WORKER_FILES_H_
#define ACCEL_LAUNCHER_PROCESS_WORKER_FILES_H_

#include <string>

namespace accel::launcher {

struct WorkerFiles {
  std::string error_file;     // ACCEL_ERROR_FILE
  std::string progress_file;  // ACCEL_PROGRESS_FILE; "" = hang detection off
  // The Python progress module's directory, put first on PYTHONPATH (agent/python_progress.h);
  // "" = not a Python worker, or python_progress off.
  std::string python_module_dir;
};

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_PROCESS_WORKER_FILES_H_
