// WorkerEnv: the environment of one worker, as `accelerate launch` and torchrun give it.
//
// The launcher's own environment passes through (as both launchers do), except the variables
// this launcher owns (torchrun's and ACCEL_*'s, so a stale RANK from an outer launcher never
// leaks in); then, each only where the peer sets it (docs/libaccel.md lists every one):
//   - torchrun's RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE,
//     ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_* when the
//     plan's torchrun_env is set;
//   - accelerate launch's ACCELERATE_MIXED_PRECISION and ACCELERATE_DYNAMO_* always;
//     ACCELERATE_USE_CPU where its simple launcher sets it (not for a multi-GPU job);
//     ACCELERATE_DEBUG_MODE, ACCELERATE_CPU_AFFINITY and ACCELERATE_GRADIENT_ACCUMULATION_STEPS
//     only when asked; CUDA_VISIBLE_DEVICES from gpu_ids; what older releases set (and do
//     not) by accelerate_version (accelerate_env.h);
//   - for a Python script with accelerate's plugins (FSDP, DeepSpeed, Megatron-LM, FP8,
//     parallelism_config): the variables accelerate launch gives them (accelerate_env.h);
//   - OMP_NUM_THREADS: num_cpu_threads_per_process, else the launcher's own, else accelerate's
//     default (1 on GPU; physical cores / local processes on CPU), or torchrun's (1 with several
//     local processes) on a torchrun command line;
//   - ours: ACCEL_ERROR_FILE, ACCEL_BACKEND, and ACCEL_STORE_ENDPOINT, ACCEL_RDZV_TOKEN,
//     ACCEL_LOCAL_ADDR, ACCEL_PROGRESS_FILE when there is a rendezvous / hang detection;
//   - PYTHONPATH with the Python progress module's directory first, for a Python worker with a
//     progress file (files.python_module_dir; python_progress.h), the launcher's own after it.
// Pure: no environment, file or device is read here.
#ifndef ACCEL_LAUNCHER_AGENT_WORKER_ENV_H_
#define ACCEL_LAUNCHER_AGENT_WORKER_ENV_H_

#include <string>
#include <vector>

#include "launcher/agent/plan.h"
#include "launcher/process/worker_files.h"

namespace accel::launcher {

// Returns the envp ("NAME=value", each name once) of local rank `local_rank`, built on `base_env`
// (the launcher's environ).
std::vector<std::string> WorkerEnv(const LaunchPlan& plan, const RendezvousResult& rdzv,
                                   int local_rank, const WorkerFiles& files,
                                   const std::vector<std::string>& base_env);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_WORKER_ENV_H_
