// accel::Options: everything an Accelerator needs, as a plain struct whose every default is set
// here from accel/defaults.h. Options::FromEnv() fills it from the launcher's
// environment contract (common/env_contract.h); a bare process (no env) is a world
// of 1.
#ifndef ACCEL_OPTIONS_H_
#define ACCEL_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "accel/defaults.h"

namespace accel {

enum class MixedPrecision { kNo, kFp16, kBf16 };
enum class Backend { kAuto, kGloo, kNccl, kMpi };
// kAuto: the dynamic loss scaler runs iff fp16 autocast is active (CUDA). kDynamic: always (a
// test can exercise the scaler in fp32 on CPU). kOff: never.
enum class LossScaling { kAuto, kDynamic, kOff };
// DDP communication overlapping backward. kAuto: on for CUDA; on CPU, on unless this machine's
// processes x compute threads >= its usable cores (common/overlap.h); kOn / kOff force it.
enum class Overlap { kAuto, kOn, kOff };
// The shared-memory all-reduce among ranks of one machine (hierarchical across machines). kAuto:
// for CPU tensors with the gloo backend; kOn: also for CUDA tensors (staged through host memory,
// NCCL among one leader per machine); kOff: never.
enum class SharedMemory { kAuto, kOn, kOff };

struct Options {
  // World. -1 = "from the environment, else world of 1".
  int rank = -1;
  int local_rank = -1;
  int world_size = -1;
  int local_world_size = -1;

  // Precision and accumulation (ACCELERATE_MIXED_PRECISION,
  // ACCELERATE_GRADIENT_ACCUMULATION_STEPS).
  MixedPrecision mixed_precision = MixedPrecision::kNo;
  int gradient_accumulation_steps = 1;
  bool cpu = false;  // ACCELERATE_USE_CPU: stay on CPU even with a GPU.
  bool debug = false;

  // Collectives (ACCEL_BACKEND). kAuto: NCCL on CUDA, MPI under mpirun/srun with MPI, else Gloo.
  Backend backend = Backend::kAuto;
  // Rendezvous store for Gloo connection and the NCCL unique id: "host:port" (gRPC, full build
  // only) or "file:///dir". Empty = from ACCEL_STORE_ENDPOINT, else MASTER_ADDR/MASTER_PORT is
  // not enough: a world > 1 without a store endpoint (and without MPI) is an error.
  std::string store_endpoint;
  std::string rdzv_token;  // ACCEL_RDZV_TOKEN
  std::string run_id;      // TORCHELASTIC_RUN_ID + ACCEL_STORE_ATTEMPT: the store namespace.
  // ACCEL_COLLECTIVE_TIMEOUT_MS: accel-launch sets it above its hang timeout.
  std::chrono::milliseconds collective_timeout = defaults::kCollectiveTimeout;
  std::chrono::milliseconds connect_timeout = defaults::kConnectTimeout;

  // DDP buckets: gradients in reverse registration order, first bucket small so communication
  // starts early, the rest large. ACCEL_OVERLAP=auto|on|off.
  std::int64_t first_bucket_bytes = defaults::kFirstBucketBytes;
  std::int64_t bucket_bytes = defaults::kBucketBytes;
  Overlap overlap = Overlap::kAuto;
  // ACCEL_SHM=auto|on|off.
  SharedMemory shared_memory = SharedMemory::kAuto;

  // Dynamic loss scaler, matching torch.cuda.amp.GradScaler's defaults.
  LossScaling loss_scaling = LossScaling::kAuto;
  double init_scale = defaults::kInitScale;
  double growth_factor = defaults::kGrowthFactor;
  double backoff_factor = defaults::kBackoffFactor;
  int growth_interval = defaults::kGrowthInterval;

  // ACCEL_PROGRESS_FILE: the step and collective counters the launcher polls for hang detection.
  std::string progress_file;
  // ACCEL_GENERATION_FILE: the elastic launcher's membership notices (Accelerator::recover()).
  std::string generation_file;

  // Returns Options with every field the environment sets filled in; the rest keep defaults.
  // Throws accel::Error naming the variable when a value does not parse.
  static Options FromEnv();

  // Returns every problem at once ("gradient_accumulation_steps must be >= 1, got 0"); empty
  // when valid. Fields still at -1 are valid (resolved to a world of 1).
  std::vector<std::string> Validate() const;
};

// Parses "no" | "fp16" | "bf16" (case-insensitive); throws accel::Error otherwise.
MixedPrecision ParseMixedPrecision(const std::string& text);
const char* ToString(MixedPrecision mp);
// Parses "auto" | "gloo" | "nccl" | "mpi"; throws accel::Error otherwise.
Backend ParseBackend(const std::string& text);
const char* ToString(Backend backend);
// Parse "auto" | "on" | "off" (also true/false, 1/0); throw accel::Error otherwise.
Overlap ParseOverlap(const std::string& text);
SharedMemory ParseSharedMemory(const std::string& text);

}  // namespace accel

#endif  // ACCEL_OPTIONS_H_
