// Options::FromEnv and validation: the worker's reading of common/env_contract.h. No LibTorch.
#include "accel/options.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "accel/error.h"
#include "common/env_contract.h"
#include "common/env_reader.h"
#include "worker/src/env.h"

namespace accel {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

MixedPrecision ParseMixedPrecision(const std::string& text) {
  std::string v = Lower(text);
  if (v == "no" || v == "fp32" || v.empty()) return MixedPrecision::kNo;
  if (v == "fp16") return MixedPrecision::kFp16;
  if (v == "bf16") return MixedPrecision::kBf16;
  throw Error("parse mixed precision", "\"" + text + "\"", "expected no, fp16 or bf16");
}

const char* ToString(MixedPrecision mp) {
  switch (mp) {
    case MixedPrecision::kNo:
      return "no";
    case MixedPrecision::kFp16:
      return "fp16";
    case MixedPrecision::kBf16:
      return "bf16";
  }
  return "?";
}

Backend ParseBackend(const std::string& text) {
  std::string v = Lower(text);
  if (v == "auto" || v.empty()) return Backend::kAuto;
  if (v == "gloo") return Backend::kGloo;
  if (v == "nccl") return Backend::kNccl;
  if (v == "mpi") return Backend::kMpi;
  throw Error("parse backend", "\"" + text + "\"", "expected auto, gloo, nccl or mpi");
}

const char* ToString(Backend backend) {
  switch (backend) {
    case Backend::kAuto:
      return "auto";
    case Backend::kGloo:
      return "gloo";
    case Backend::kNccl:
      return "nccl";
    case Backend::kMpi:
      return "mpi";
  }
  return "?";
}

namespace {

// 0 auto, 1 on, 2 off.
int ParseAutoOnOff(const std::string& text, const char* what) {
  const std::string v = Lower(text);
  if (v == "auto" || v.empty()) return 0;
  if (v == "on" || v == "true" || v == "1") return 1;
  if (v == "off" || v == "false" || v == "0") return 2;
  throw Error(std::string("parse ") + what, "\"" + text + "\"", "expected auto, on or off");
}

}  // namespace

Overlap ParseOverlap(const std::string& text) {
  static constexpr Overlap kValues[] = {Overlap::kAuto, Overlap::kOn, Overlap::kOff};
  return kValues[ParseAutoOnOff(text, "overlap")];
}

SharedMemory ParseSharedMemory(const std::string& text) {
  static constexpr SharedMemory kValues[] = {SharedMemory::kAuto, SharedMemory::kOn,
                                             SharedMemory::kOff};
  return kValues[ParseAutoOnOff(text, "shared memory")];
}

Options Options::FromEnv() {
  using worker::EnvBool;
  using worker::EnvInt;
  Options o;
  o.rank = EnvInt(env::kRank, o.rank);
  o.local_rank = EnvInt(env::kLocalRank, o.local_rank);
  o.world_size = EnvInt(env::kWorldSize, o.world_size);
  o.local_world_size = EnvInt(env::kLocalWorldSize, o.local_world_size);
  if (const char* mp = env::Get(env::kMixedPrecision)) o.mixed_precision = ParseMixedPrecision(mp);
  o.gradient_accumulation_steps =
      EnvInt(env::kGradientAccumulationSteps, o.gradient_accumulation_steps);
  o.cpu = EnvBool(env::kUseCpu, o.cpu);
  o.debug = EnvBool(env::kDebugMode, o.debug);
  if (const char* backend = env::Get(env::kBackend)) o.backend = ParseBackend(backend);
  if (const char* endpoint = env::Get(env::kStoreEndpoint)) o.store_endpoint = endpoint;
  if (const char* token = env::Get(env::kRdzvToken)) o.rdzv_token = token;
  if (const char* progress = env::Get(env::kProgressFile)) o.progress_file = progress;
  if (const char* generation = env::Get(env::kGenerationFile)) o.generation_file = generation;
  o.collective_timeout = std::chrono::milliseconds(
      EnvInt(env::kCollectiveTimeoutMs, static_cast<int>(o.collective_timeout.count())));
  if (const char* overlap = env::Get(env::kOverlap)) o.overlap = ParseOverlap(overlap);
  if (const char* shm = env::Get(env::kShm)) o.shared_memory = ParseSharedMemory(shm);
  const char* run_id = env::Get(env::kRunId);
  o.run_id = run_id != nullptr ? run_id : "";
  return o;
}

std::vector<std::string> Options::Validate() const {
  std::vector<std::string> problems;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) problems.push_back(what);
  };
  const int world = world_size < 0 ? 1 : world_size;
  check(world_size == -1 || world_size >= 1,
        "world_size must be >= 1, got " + std::to_string(world_size));
  check(rank == -1 || (rank >= 0 && rank < world),
        "rank must be in [0, " + std::to_string(world) + "), got " + std::to_string(rank));
  check(local_rank >= -1, "local_rank must be >= 0, got " + std::to_string(local_rank));
  check(gradient_accumulation_steps >= 1, "gradient_accumulation_steps must be >= 1, got " +
                                              std::to_string(gradient_accumulation_steps));
  check(collective_timeout.count() > 0, "collective_timeout must be > 0");
  check(connect_timeout.count() > 0, "connect_timeout must be > 0");
  check(first_bucket_bytes > 0, "first_bucket_bytes must be > 0");
  check(bucket_bytes > 0, "bucket_bytes must be > 0");
  check(init_scale > 0, "init_scale must be > 0");
  check(growth_factor > 1.0, "growth_factor must be > 1");
  check(backoff_factor > 0 && backoff_factor < 1.0, "backoff_factor must be in (0, 1)");
  check(growth_interval >= 1, "growth_interval must be >= 1");
  return problems;
}

}  // namespace accel
