// The live line: one line at the bottom of the terminal, redrawn in place (machine 0's job
// status). Every other console write of the launcher (worker output, notices) runs inside
// WriteAboveLiveLine, which erases the line first and draws it again after, so the two never mix
// on screen. The line is drawn on stderr, and only when stderr is a terminal (a pipe gets plain
// status lines from the caller instead). Thread-safe: one process-wide lock.
#ifndef ACCEL_COMMON_LIVE_LINE_H_
#define ACCEL_COMMON_LIVE_LINE_H_

#include <functional>

#include "absl/strings/string_view.h"

namespace accel {

// Returns true when stderr is a terminal (the live line is drawn only then).
bool LiveLineAvailable();

// Shows `text` as the live line (cut to the terminal's width), replacing the previous one.
// Does nothing when stderr is not a terminal.
void ShowLiveLine(absl::string_view text);

// Erases the live line; nothing is drawn again until the next ShowLiveLine.
void ClearLiveLine();

// Runs `write` with the live line erased before and redrawn after.
void WriteAboveLiveLine(const std::function<void()>& write);

}  // namespace accel

#endif  // ACCEL_COMMON_LIVE_LINE_H_
