// The environment contract between the launcher and its workers.
//
// The launcher sets these variables in its workers (which, when: launcher/agent/worker_env.h);
// libaccel and unmodified torchrun-style and HF accelerate scripts read them (libaccel through
// common/env_reader.h). launcher/ and worker/ both include it, so it
// depends on nothing but the standard library.
#ifndef ACCEL_COMMON_ENV_CONTRACT_H_
#define ACCEL_COMMON_ENV_CONTRACT_H_

namespace accel::env {

// torchrun's names.
inline constexpr char kRank[] = "RANK";
inline constexpr char kLocalRank[] = "LOCAL_RANK";
inline constexpr char kWorldSize[] = "WORLD_SIZE";
inline constexpr char kLocalWorldSize[] = "LOCAL_WORLD_SIZE";
inline constexpr char kGroupRank[] = "GROUP_RANK";
inline constexpr char kGroupWorldSize[] = "GROUP_WORLD_SIZE";
inline constexpr char kRoleRank[] = "ROLE_RANK";
inline constexpr char kRoleWorldSize[] = "ROLE_WORLD_SIZE";
inline constexpr char kRoleName[] = "ROLE_NAME";
inline constexpr char kMasterAddr[] = "MASTER_ADDR";
inline constexpr char kMasterPort[] = "MASTER_PORT";
inline constexpr char kRestartCount[] = "TORCHELASTIC_RESTART_COUNT";
inline constexpr char kMaxRestarts[] = "TORCHELASTIC_MAX_RESTARTS";
inline constexpr char kRunId[] = "TORCHELASTIC_RUN_ID";
inline constexpr char kOmpNumThreads[] = "OMP_NUM_THREADS";

// accelerate's names.
inline constexpr char kMixedPrecision[] = "ACCELERATE_MIXED_PRECISION";  // no | fp16 | bf16
inline constexpr char kUseCpu[] = "ACCELERATE_USE_CPU";                  // true | false
inline constexpr char kDebugMode[] = "ACCELERATE_DEBUG_MODE";            // true | false
inline constexpr char kGradientAccumulationSteps[] = "ACCELERATE_GRADIENT_ACCUMULATION_STEPS";
inline constexpr char kDynamoBackend[] = "ACCELERATE_DYNAMO_BACKEND";  // NO | INDUCTOR | ...
inline constexpr char kDynamoMode[] = "ACCELERATE_DYNAMO_MODE";
inline constexpr char kDynamoUseFullgraph[] = "ACCELERATE_DYNAMO_USE_FULLGRAPH";  // True | False
inline constexpr char kDynamoUseDynamic[] = "ACCELERATE_DYNAMO_USE_DYNAMIC";
inline constexpr char kDynamoUseRegionalCompilation[] =
    "ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION";
inline constexpr char kCpuAffinity[] = "ACCELERATE_CPU_AFFINITY";  // 1 when enable_cpu_affinity
// Intel OpenMP's, set by accelerate launch for CPU jobs.
inline constexpr char kKmpAffinity[] = "KMP_AFFINITY";
inline constexpr char kKmpBlocktime[] = "KMP_BLOCKTIME";

// Ours.
// host:port of the rendezvous server's KV store; "file:///dir" for a file store.
inline constexpr char kStoreEndpoint[] = "ACCEL_STORE_ENDPOINT";
// The rendezvous attempt (membership generation) whose store namespace the workers use: raised by
// every membership change, joins included (TORCHELASTIC_RESTART_COUNT counts only failures, so two
// generations could share one namespace and read each other's keys).
inline constexpr char kStoreAttempt[] = "ACCEL_STORE_ATTEMPT";
// The job's rendezvous token: proves the worker to the store (TLS certificates derived from it
// over TCP, never sent; call metadata on a one-machine job's Unix socket).
inline constexpr char kRdzvToken[] = "ACCEL_RDZV_TOKEN";
// The user's CA (tls_ca_file) that verifies a rendezvous server with the user's certificate.
inline constexpr char kTlsCaFile[] = "ACCEL_TLS_CA_FILE";
// Where a dying worker writes its JSON error report {message, time, rank}.
inline constexpr char kErrorFile[] = "ACCEL_ERROR_FILE";
// Collective backend chosen by the launcher: gloo | nccl | mpi.
inline constexpr char kBackend[] = "ACCEL_BACKEND";
// Where a libaccel worker reports its progress for hang detection: a file that the worker keeps
// up to date (common/progress_record.h: steps, collectives started and done) and the launcher
// polls.
inline constexpr char kProgressFile[] = "ACCEL_PROGRESS_FILE";
// Deadline of one collective in milliseconds, set by the launcher so that a collective waiting on
// a hung peer outlasts hang detection (the launcher then names the hung rank, not a waiting one).
inline constexpr char kCollectiveTimeoutMs[] = "ACCEL_COLLECTIVE_TIMEOUT_MS";
// This machine's address as the other machines reach it (the address its launcher joined the
// rendezvous from, or local_addr / network_interface): collectives bind there. Unset on a
// single-machine job, where everything talks over loopback.
inline constexpr char kLocalAddr[] = "ACCEL_LOCAL_ADDR";
// Elastic jobs (min_machines < num_machines): a file the launcher replaces (write + rename) at
// every membership change, "key=value" lines (generation, world, base_rank, group_rank,
// group_world, local_world, store_attempt, master_port, joining); a libaccel worker whose program
// calls Accelerator::recover() regroups with it in place, and one started with joining=1 receives
// the training state from the running ones (docs/libaccel.md "In-place recovery"). Set by the
// launcher under elastic_in_place.
inline constexpr char kGenerationFile[] = "ACCEL_GENERATION_FILE";
// libaccel's own switches, read by Options::FromEnv (the launcher passes them through):
// DDP overlap (auto | on | off) and the shared-memory all-reduce (auto | on | off).
inline constexpr char kOverlap[] = "ACCEL_OVERLAP";
inline constexpr char kShm[] = "ACCEL_SHM";
// CUDA device selection, from gpu_ids.
inline constexpr char kCudaVisibleDevices[] = "CUDA_VISIBLE_DEVICES";

}  // namespace accel::env

#endif  // ACCEL_COMMON_ENV_CONTRACT_H_
