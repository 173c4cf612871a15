// Finds the config file and resolves the Config in effect:
//   lookup: --config_file, $ACCEL_CONFIG_FILE, ~/.config/accel-launch/default_config.yaml,
//           $HF_HOME/accelerate/default_config.yaml (HF_HOME defaults to ~/.cache/huggingface)
//   precedence (later wins): defaults (from detected hardware when no file exists) < file <
//           scheduler (Slurm / Open MPI) < environment (ACCEL_<KEY>) < command line
// then normalizes (use_cpu / distributed_type agreement) and validates. All problems of all
// layers are collected; a non-empty `problems` means nothing may be launched.
#ifndef ACCEL_LAUNCHER_CONFIG_RESOLVE_H_
#define ACCEL_LAUNCHER_CONFIG_RESOLVE_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/config/config.h"
#include "launcher/config/diagnostics.h"
#include "launcher/config/source.h"

namespace accel::launcher {

// Returns ~/.config/accel-launch/default_config.yaml ("" when HOME is unset).
std::string OurDefaultConfigPath(const EnvLookup& env);
// Returns $HF_HOME/accelerate/default_config.yaml, HF_HOME defaulting to
// ${XDG_CACHE_HOME:-~/.cache}/huggingface as in accelerate.
std::string AccelerateDefaultConfigPath(const EnvLookup& env);

// Returns the defaults for a machine with `gpus` GPUs: one process per GPU (MULTI_GPU when
// more than one), or one process when there is none (the agent then runs it on CPU).
Config DefaultsForHardware(int gpus);

struct ConfigLookup {
  std::string path;                // the file to read; "" = none found
  bool explicit_path = false;      // named by --config_file or $ACCEL_CONFIG_FILE (must exist)
  std::vector<std::string> tried;  // every default path looked at, in order
};

// Applies the lookup order. `flag_path` is --config_file ("" when not given).
ConfigLookup FindConfigFile(const std::string& flag_path, const EnvLookup& env);

struct ResolveOptions {
  std::string config_file;  // --config_file, "" when not given
  // Command-line values in the order given (later ones win).
  std::vector<FlagValue> flags;
  // torchrun's --nproc_per_node (processes per machine: an integer, or auto, gpu, cpu): when set,
  // num_processes is this times num_machines. A --num_processes that disagrees is a problem.
  std::string nproc_per_node;
  // Problems the command line already found (spellings that disagree), reported with the rest.
  std::vector<Diagnostic> flag_problems;
  EnvLookup env;
  // Counts GPUs for hardware defaults; `why` gets the reason when there are none.
  std::function<int(std::string* why)> count_gpus;
  bool detect_scheduler = true;
};

struct ResolvedConfig {
  Config config;
  std::string path;  // the file in effect; "" = none
  SourceMap sources;
  std::vector<Diagnostic> problems;  // non-empty: invalid, launch nothing (exit code 2)
  std::vector<std::string> notices;  // one line each, for the user
};

ResolvedConfig ResolveConfig(const ResolveOptions& options);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_RESOLVE_H_
