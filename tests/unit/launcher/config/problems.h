// Problems(): a config text loaded as "cfg.yaml" and validated, every diagnostic formatted (the
// loader tests' one lens: loader_test.cc, loader_limits_test.cc).
#ifndef ACCEL_TESTS_UNIT_LAUNCHER_CONFIG_PROBLEMS_H_
#define ACCEL_TESTS_UNIT_LAUNCHER_CONFIG_PROBLEMS_H_

#include <string>
#include <vector>

#include "launcher/config/loader.h"
#include "launcher/config/validate.h"

namespace accel::launcher {

// Loads `text` as "cfg.yaml", validates, and returns every diagnostic formatted.
inline std::string Problems(const std::string& text, Config* config = nullptr) {
  Config local;
  Config* c = config != nullptr ? config : &local;
  SourceMap sources;
  std::vector<Diagnostic> problems = ApplyConfigText("cfg.yaml", text, c, &sources);
  std::vector<Diagnostic> invalid = ValidateConfig(*c, sources);
  problems.insert(problems.end(), invalid.begin(), invalid.end());
  return FormatDiagnostics(problems);
}

}  // namespace accel::launcher

#endif  // ACCEL_TESTS_UNIT_LAUNCHER_CONFIG_PROBLEMS_H_
