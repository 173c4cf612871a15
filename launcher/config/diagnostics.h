// Compiler-style config diagnostics: `file:line:col: message`, then the offending
// line, then a caret under the column; "did you mean" suggestions by edit distance.
#ifndef ACCEL_LAUNCHER_CONFIG_DIAGNOSTICS_H_
#define ACCEL_LAUNCHER_CONFIG_DIAGNOSTICS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace accel::launcher {

struct Diagnostic {
  std::string where;      // a file path, or e.g. "ACCEL_NUM_MACHINES=0", "--machine_rank 3"
  int line = 0;           // 1-based; 0 = no position (then no caret either)
  int column = 0;         // 1-based
  std::string line_text;  // the offending line, shown above the caret
  std::string message;
};

// Returns the diagnostic as text without a trailing newline:
//   where:line:col: message        where: message      message
//   <line_text>
//        ^
std::string FormatDiagnostic(const Diagnostic& diagnostic);

// Returns every diagnostic, each followed by a newline.
std::string FormatDiagnostics(const std::vector<Diagnostic>& diagnostics);

// Returns the Levenshtein distance between `a` and `b`.
int EditDistance(absl::string_view a, absl::string_view b);

// Returns the candidate closest to `word` when it is plausibly a typo of it (distance at most
// max(2, |word| / 4), compared case-insensitively with '-' read as '_'); "" otherwise.
std::string ClosestMatch(absl::string_view word, const std::vector<absl::string_view>& candidates);

// Returns `message` + "; did you mean '<match>'?" when ClosestMatch finds one.
std::string WithSuggestion(std::string message, absl::string_view word,
                           const std::vector<absl::string_view>& candidates);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_DIAGNOSTICS_H_
