// accelerate launch's plugin arguments for Python programs: the fsdp_config, deepspeed_config,
// megatron_lm_config, fp8_config and parallelism_config sections of a config file and the
// --fsdp_*, --zero_stage, --offload_*, --megatron_lm_*, --fp8_*, --parallelism_config_*, ...
// options, held as accelerate's argparse namespace holds them (Config::accelerate_args): each
// value as Python's str() writes it. Sections copy their keys as accelerate does (fsdp_config's
// `x` is args.fsdp_x when x lacks the prefix, fp8_config's `x` is args.fp8_x); options override
// the file. launcher/agent/accelerate_env.h turns them into the workers' variables.
#ifndef ACCEL_LAUNCHER_CONFIG_ACCELERATE_ARGS_H_
#define ACCEL_LAUNCHER_CONFIG_ACCELERATE_ARGS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "launcher/config/config.h"
#include "launcher/config/yaml.h"

namespace accel::launcher {

// How argparse converts an option's text (accelerate launch's `type=`), or a switch.
enum class PyType { kStr, kInt, kFloat, kBool, kStrToBool, kSwitch, kTuple };

// One plugin option of `accelerate launch` (v1.14's parser).
struct AccelerateOption {
  absl::string_view name;     // argparse dest, e.g. "fsdp_offload_params"
  absl::string_view section;  // the config key its flag travels in, e.g. "fsdp_config"
  PyType type;
  const char* default_str;  // str() of argparse's default; nullptr = None
};

// Every plugin option, in v1.14's parser order (and older releases' fsdp_backward_prefetch_policy).
const std::vector<AccelerateOption>& AccelerateOptions();
const AccelerateOption* FindAccelerateOption(absl::string_view name);

// Returns args.`name`: the value set by the file or an option (`args`), else the default
// argparse has for it in accelerate release `release` (Config::accelerate_release; None: `.none`).
AccelerateArg ArgOrDefault(const std::map<std::string, AccelerateArg>& args, int release,
                           absl::string_view name);
inline AccelerateArg ArgOrDefault(const Config& config, absl::string_view name) {
  return ArgOrDefault(config.accelerate_args, config.accelerate_release(), name);
}

// The value a YAML scalar has in Python after PyYAML (YAML 1.1) loads it, as str() writes it.
AccelerateArg PyFromYaml(const YamlValue& value);

// Python's repr() of a float, e.g. 1.0, 0.5, 100000000.0, 1e-05, 1e+16.
std::string PyFloatRepr(double value);

// Setter of the section keys. A mapping (from a file) copies its keys into the namespace; a
// scalar "name=value" (how launcher/cli carries an option) sets one option as argparse would.
absl::Status SetAccelerateSection(const YamlValue& value, absl::string_view section,
                                  Config* config);

// What accelerate launch refuses (or accel-launch cannot run) in the plugin settings: (config key,
// message saying what to write instead) pairs.
std::vector<std::pair<std::string, std::string>> AccelerateProblems(const Config& config);

// accelerate_version's setter: X.Y or X.Y.Z of a release from 0.15 on (a newer one is read as
// the newest known, 1.14); stored as X.Y.
absl::Status SetAccelerateVersion(const YamlValue& value, std::string* version);

// distributed_type's plugin words: FSDP, DEEPSPEED, MEGATRON_LM (case-insensitive) → `plugin`.
bool ParseAcceleratePlugin(absl::string_view text, std::string* plugin);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_ACCELERATE_ARGS_H_
