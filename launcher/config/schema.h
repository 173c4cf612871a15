// The config schema: every key of accelerate's default_config.yaml plus our additions, each with
// its type, how a raw value (YAML node, environment variable or flag text) sets it, and how it is
// written back. The single table behind the loader, the environment layer, the launch flags, the
// writer, `config validate` and docs/config.md.
#ifndef ACCEL_LAUNCHER_CONFIG_SCHEMA_H_
#define ACCEL_LAUNCHER_CONFIG_SCHEMA_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "launcher/config/config.h"
#include "launcher/config/values.h"
#include "launcher/config/yaml.h"

namespace accel::launcher {

enum class KeyKind {
  kBool,     // true/false (also yes/no, on/off, 1/0)
  kInt,      // a decimal integer
  kSeconds,  // a non-negative number of seconds (fractions allowed)
  kString,   // any scalar
  kEnum,     // one of a fixed set of words
  kList,     // "0,1,3" or a YAML list of integers
  kSection,  // an accelerate sub-config we do not support: accepted only when empty
  kIgnored,  // accepted for accelerate compatibility and ignored (TPU, SageMaker details)
};

// When the config writer emits a key.
enum class WriteMode { kAlways, kWhenNotDefault, kNever };

struct KeySpec {
  absl::string_view name;  // YAML spelling, snake_case
  KeyKind kind;
  bool accelerate;  // written by `accelerate config` (false: one of our additions)
  WriteMode write;
  std::string help;  // one line: meaning, values, default
  // Sets the key from `value`. The error message is the cause only, e.g.
  // "expected an integer, got 'two'"; the caller adds the key and the position.
  absl::Status (*set)(const YamlValue& value, Config* config);
  // Returns the value as YAML text (quoted where YAML would misread it), e.g. "'no'", "2".
  std::string (*get)(const Config& config);
};

// Returns every key, in alphabetical order (the order accelerate writes them in).
const std::vector<KeySpec>& Schema();

// Returns the key named `name` ('-' accepted for '_'), or nullptr.
const KeySpec* FindKey(absl::string_view name);

// Returns every key name, for "did you mean" suggestions.
std::vector<absl::string_view> KeyNames();

// Returns the environment variable that sets `key`: "ACCEL_" + upper-case name.
std::string EnvVarName(absl::string_view key);

// Returns `value` as a YAML scalar, single-quoted when YAML would read it as something else.
std::string YamlQuote(absl::string_view value);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_SCHEMA_H_
