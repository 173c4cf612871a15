// Where each config value came from (the "source map"), and access to the environment.
// Validation points its diagnostics at the origin of the offending value: a file position with
// a caret, an environment variable, a flag, or the scheduler variable that set it.
#ifndef ACCEL_LAUNCHER_CONFIG_SOURCE_H_
#define ACCEL_LAUNCHER_CONFIG_SOURCE_H_

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "launcher/config/diagnostics.h"

namespace accel::launcher {

struct ValueOrigin {
  enum class Kind {
    kDefault,
    kHardware,
    kFile,
    kScheduler,
    kEnvironment,
    kCommandLine,
    kRejected,  // a value was given but rejected (already reported); cross-field checks skip it
  };
  Kind kind = Kind::kDefault;
  std::string where;  // file path, "ACCEL_NUM_MACHINES=2", "--num_machines 2", "SLURM_NNODES=2"
  int line = 0;       // kFile: 1-based position of the value
  int column = 0;
  std::string line_text;  // kFile: the line holding the value
};

// Config key → origin of the value in effect. Keys absent here hold their default.
using SourceMap = std::map<std::string, ValueOrigin>;

// One command-line value for a config key, as given.
struct FlagValue {
  std::string key;       // the config key, e.g. "main_process_port"
  std::string text;      // the value; booleans as "true"/"false"
  std::string spelling;  // how it was written when not "--<key> <text>", e.g. "--master_port 29501"
};

// Returns true unless `key`'s value was rejected (its problem is already reported).
bool Accepted(const SourceMap& sources, const std::string& key);

// Returns a diagnostic for `key` pointing at its origin in `sources`.
Diagnostic DiagnosticFor(const SourceMap& sources, const std::string& key, std::string message);

// Returns a short description of an origin for `config validate` output: "file.yaml:3",
// "ACCEL_NUM_MACHINES", "--num_machines", "SLURM_NNODES", "detected hardware" or "default".
std::string DescribeOrigin(const ValueOrigin& origin);

// Reads an environment variable; std::nullopt when unset. Injectable so tests need no setenv.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Returns an EnvLookup over this process's environment.
EnvLookup ProcessEnvironment();

// Returns an EnvLookup over a fixed map (tests).
EnvLookup FixedEnvironment(std::map<std::string, std::string> values);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_SOURCE_H_
