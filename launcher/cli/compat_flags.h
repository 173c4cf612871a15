// torchrun's and `accelerate launch`'s own spellings on accel-launch's command line, beyond the
// config keys that flags.cc registers from the schema:
//   - launch options that are not config keys: -m/--module, --no_python, --run_path, -q/--quiet,
//     --rdzv_conf, --start_method, --role;
//   - torchrun's names for config keys: --nproc_per_node (per machine; 1 when a torchrun command
//     line does not say, as torchrun), --nnodes, --node_rank, --master_addr, --master_port,
//     --standalone, --rdzv_endpoint, --rdzv_id, --numa_binding, --redirects/-r and --tee/-t's
//     values 0..3; --event_log_handler, --logs_specs and --signals_to_handle have no effect;
// (accelerate's plugin and platform options: accelerate_flags.h.)
// Both '_' and '-' spellings are accepted. A torchrun spelling and an accelerate spelling of the
// same setting that disagree are a problem that names both.
#ifndef ACCEL_LAUNCHER_CLI_COMPAT_FLAGS_H_
#define ACCEL_LAUNCHER_CLI_COMPAT_FLAGS_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "launcher/config/diagnostics.h"
#include "launcher/config/source.h"

namespace accel::launcher {

// The compat options as given (empty strings = not given).
struct CompatArgs {
  bool module = false;     // -m: run PROGRAM as a Python module
  bool no_python = false;  // --no_python: exec PROGRAM as it is, even a .py
  bool run_path = false;   // torchrun's --run_path: PROGRAM is a Python script
  bool quiet = false;      // accelerate's -q (accepted; the failure report is already short)
  bool standalone = false;
  std::string rdzv_conf;     // key=value,...; join_timeout becomes rdzv_timeout
  std::string start_method;  // spawn, fork, forkserver (accepted; workers are always exec'ed)
  std::string role;          // ROLE_NAME in the workers
  std::string nproc_per_node;
  std::string nnodes;
  std::string node_rank;
  std::string master_addr;
  std::string master_port;
  std::string rdzv_endpoint;
  std::string rdzv_id;
  std::string redirects;
  std::string numa_binding;  // torchrun's: pins like enable_cpu_affinity
  std::string event_log_handler, logs_specs, signals_to_handle;  // torchrun's; no effect here
};

// Registers the compat options on `app` (group `group`), bound to `args`. Appends every option
// name to `names` (for "did you mean") and the names that take a value to `value_options`.
void AddCompatOptions(CLI::App* app, const std::string& group, CompatArgs* args,
                      std::vector<std::string>* names, std::vector<std::string>* value_options);

struct CompatResult {
  std::vector<FlagValue> flags;  // every config value of the command line, in order
  std::string nproc_per_node;    // torchrun's --nproc_per_node, for the resolver
  std::vector<Diagnostic> problems;
  std::vector<std::string> notices;
  bool torchrun_style = false;  // a torchrun-only option was given
};

// Translates `args` into config values after `key_flags` (the config-key options as given,
// `--tee`'s torchrun values included) and checks that the spellings agree.
CompatResult TranslateCompat(const CompatArgs& args, const std::vector<FlagValue>& key_flags);

// Returns whether `text` is a torchrun std-streams spec: 0, 1, 2 or 3 for every local rank, or
// "local_rank:value" pairs separated by commas ("0:1,1:3").
bool IsStdSpec(absl::string_view text);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CLI_COMPAT_FLAGS_H_
