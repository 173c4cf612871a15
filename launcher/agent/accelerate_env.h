// The variables `accelerate launch` (v1.13/1.14's prepare_multi_gpu_env, prepare_deepspeed_cmd_env
// and setup_fp8_env) gives a Python program for accelerate's plugins: FSDP (ACCELERATE_USE_FSDP,
// FSDP_*), DeepSpeed (ACCELERATE_USE_DEEPSPEED, ACCELERATE_DEEPSPEED_*,
// ACCELERATE_CONFIG_DS_FIELDS, PYTHONPATH), Megatron-LM (ACCELERATE_USE_MEGATRON_LM,
// MEGATRON_LM_*), FP8 (ACCELERATE_FP8_*), ParallelismConfig (ACCELERATE_USE_PARALLELISM_CONFIG,
// PARALLELISM_CONFIG_*), from the plan's accelerate arguments (launcher/config/accelerate_args.h).
// The accelerate variables every launch has are worker_env.cc's; this adjusts them where a plugin
// launch differs (DeepSpeed sets no ACCELERATE_DYNAMO_*, a plugin launch no ACCELERATE_USE_CPU).
// Pure: no environment is read.
#ifndef ACCEL_LAUNCHER_AGENT_ACCELERATE_ENV_H_
#define ACCEL_LAUNCHER_AGENT_ACCELERATE_ENV_H_

#include <map>
#include <string>

#include "launcher/agent/plan.h"

namespace accel::launcher {

// Adds the plugin variables of `plan` to `vars` (name → value); `python_path` is the launcher's
// own PYTHONPATH ("" when unset), which DeepSpeed's launch extends with the working directory.
void AddAcceleratePluginVars(const LaunchPlan& plan, const std::string& python_path,
                             std::map<std::string, std::string>* vars);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_ACCELERATE_ENV_H_
