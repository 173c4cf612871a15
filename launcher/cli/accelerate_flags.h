// `accelerate launch`'s plugin and platform options on accel-launch's command line (every
// spelling of every release from 0.15 to 1.14, '_' and '-'):
//   - --use_fsdp, --use_deepspeed, --use_megatron_lm: distributed_type FSDP / DEEPSPEED /
//     MEGATRON_LM; --fp16 (old releases): mixed_precision fp16;
//   - the plugin options (--fsdp_*, --zero_stage, --offload_*, --gradient_clipping, --deepspeed_*,
//     --megatron_lm_*, --fp8_*, --use_parallelism_config, --parallelism_config_*): carried to the
//     config as "<section>" = "name=value" (launcher/config/accelerate_args.h);
//   - what accel-launch does not run (TPUs, Apple MPS, IPEX, XPU, SageMaker, accelerate's own
//     mpirun launch): one problem each, saying what to do instead.
#ifndef ACCEL_LAUNCHER_CLI_ACCELERATE_FLAGS_H_
#define ACCEL_LAUNCHER_CLI_ACCELERATE_FLAGS_H_

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "launcher/config/diagnostics.h"
#include "launcher/config/source.h"

namespace accel::launcher {

struct AccelerateFlagArgs {
  std::map<std::string, CLI::Option*> values;  // option name → its CLI11 option (texts given)
  std::map<std::string, bool> switches;        // option name → given
};

// Registers the options on `app` (group `group`); appends every name to `names` and the
// spellings that take a value to `value_options`.
void AddAccelerateOptions(CLI::App* app, const std::string& group, AccelerateFlagArgs* args,
                          std::vector<std::string>* names, std::vector<std::string>* value_options);

// Appends the config values the options set to `flags`, and a problem per refused option.
void TranslateAccelerate(const AccelerateFlagArgs& args, std::vector<FlagValue>* flags,
                         std::vector<Diagnostic>* problems);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CLI_ACCELERATE_FLAGS_H_
