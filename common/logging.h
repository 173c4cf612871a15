// Logging for the launcher and rendezvous: spdlog, one console logger, "[accel-launch]" prefix.
#ifndef ACCEL_COMMON_LOGGING_H_
#define ACCEL_COMMON_LOGGING_H_

#include <spdlog/spdlog.h>

namespace accel {

// Configures the default logger once: stderr, "[accel-launch] <level> msg"; `verbose` → debug.
void InitLogging(bool verbose);

}  // namespace accel

#endif  // ACCEL_COMMON_LOGGING_H_
