// Logging for the launcher and rendezvous: every message the launcher writes to stderr goes
// through here, under spdlog's one console lock, so lines from different threads never
// interleave. (The CLI's usage, flag and configuration messages are the command's own output:
// they go to the streams RunCli is given.) Two kinds:
//   - leveled log lines through spdlog's default logger (spdlog::warn, spdlog::debug, ...):
//     "[accel-launch] <level>: msg", configured by InitLogging;
//   - notices, always shown whatever the level: "[accel-launch] msg" (Notice), and multi-line
//     reports written as they are (NoticeBlock: the plan, the failure table).
// Thread-safe. A notice is flushed before the call returns, so a caller may _Exit right after.
// Notices are written above the live line (common/live_line.h) when one is shown.
#ifndef ACCEL_COMMON_LOGGING_H_
#define ACCEL_COMMON_LOGGING_H_

#include <spdlog/spdlog.h>

#include "absl/strings/string_view.h"

namespace accel {

// What starts every launcher line on stderr.
inline constexpr char kLogPrefix[] = "[accel-launch] ";

// Configures the default logger once: stderr, "[accel-launch] <level>: msg"; `verbose` → debug.
void InitLogging(bool verbose);

// Writes "[accel-launch] <message>\n" to stderr, the message made Printable (common/printable.h).
void Notice(absl::string_view message);

// Writes `text` to stderr exactly as given (a report that ends with its own newline).
void NoticeBlock(absl::string_view text);

}  // namespace accel

#endif  // ACCEL_COMMON_LOGGING_H_
