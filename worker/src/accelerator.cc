// accel::Accelerator: world discovery, device choice, prepare, the training step (accumulation,
// DDP, loss scaling) and collectives. Checkpointing lives in state_io.cc.
#include "accel/accelerator.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/optimizer.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "accel/error.h"
#include "accel/error_file.h"
#include "common/env_contract.h"
#include "common/overlap.h"
#include "worker/src/accelerator_state.h"
#include "worker/src/amp/autocast_compat.h"
#include "worker/src/blas_threads.h"
#include "worker/src/comm/factory.h"
#include "worker/src/comm/progress_communicator.h"
#include "worker/src/ddp/ordered_communicator.h"
#include "worker/src/elastic/join.h"
#include "worker/src/env.h"

namespace accel {
namespace {

using worker::EnvInt;

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

// Fills rank/world from MPI's variables when the torchrun ones are absent (mpirun -np N).
void ResolveWorld(const Options& o, internal::AcceleratorState& s) {
  s.rank = o.rank;
  s.world = o.world_size;
  s.local_rank = o.local_rank;
  if (s.world < 0 && worker::StartedByMpi()) {
    s.world_from_mpi = true;
    s.world = EnvInt("OMPI_COMM_WORLD_SIZE", EnvInt("PMI_SIZE", -1));
    s.rank = EnvInt("OMPI_COMM_WORLD_RANK", EnvInt("PMI_RANK", EnvInt("PMIX_RANK", -1)));
    if (s.local_rank < 0)
      s.local_rank = EnvInt("OMPI_COMM_WORLD_LOCAL_RANK", EnvInt("MPI_LOCALRANKID", -1));
  }
  if (s.world < 0) s.world = 1;
  if (s.world > 1 && s.rank < 0) {
    throw Error(
        "create accelerator", "",
        "world size " + std::to_string(s.world) + " but no rank: set RANK (accel-launch does)");
  }
  if (s.rank < 0) s.rank = 0;
  if (s.local_rank < 0) s.local_rank = s.world == 1 ? 0 : s.rank;
  if (s.rank >= s.world) {
    throw Error("create accelerator", "",
                "rank " + std::to_string(s.rank) + " >= world size " + std::to_string(s.world));
  }
}

// How often a regroup's store wait looks for a newer generation.
constexpr std::chrono::milliseconds kRegroupSlice(200);

// Accelerators created in this process: all ranks create them in the same order, so the count
// names the process group's keys in the store.
std::atomic<int> g_groups{0};

// Whether DDP overlaps communication with backward here; says why once on local rank 0.
bool ResolveOverlap(const internal::AcceleratorState& s) {
  if (s.options.overlap != Overlap::kAuto) return s.options.overlap == Overlap::kOn;
  // On a GPU the compute is the device's: the communication thread only enqueues and polls.
  if (s.device.is_cuda()) return true;
  const int processes = s.options.local_world_size > 0 ? s.options.local_world_size : 1;
  const int threads = at::get_num_threads();
  const int cores = UsableCores();
  const bool on = OverlapHelps(processes, threads, cores);
  if (s.local_rank == 0 && (!on || s.options.debug)) {
    std::cerr << "[accel] DDP overlap " << DescribeOverlap(processes, threads, cores) << "\n";
  }
  return on;
}

}  // namespace

namespace internal {

void PrepareDdp(AcceleratorState& s) {
  std::vector<at::Tensor> trainable;
  for (const auto& p : PreparedParameters(s)) {
    if (p.requires_grad()) trainable.push_back(p);
  }
  s.grad_sync.reset();  // its hooks go before the new ones are added
  if (trainable.empty()) return;
  worker::GradSyncOptions gs;
  gs.first_bucket_bytes = s.options.first_bucket_bytes;
  gs.bucket_bytes = s.options.bucket_bytes;
  gs.overlap = ResolveOverlap(s);
  gs.timeout = s.options.collective_timeout;
  gs.timings = s.options.debug;
  gs.progress = s.progress.get();
  gs.zero_to_none = ACCEL_TORCH_AT_LEAST(2, 0);
  s.grad_sync = std::make_unique<worker::GradSync>(std::move(trainable), *s.ddp_comm, gs);
}

void ConnectGroup(AcceleratorState& s, std::int64_t attempt, const std::string& prefix,
                  bool regroup) {
  worker::GroupSpec spec{s.rank,
                         s.world,
                         prefix,
                         s.options.connect_timeout,
                         s.options.shared_memory,
                         !s.options.generation_file.empty()};
  std::unique_ptr<worker::Kv> kv;
  if (s.world > 1 && s.backend != Backend::kMpi) {
    if (s.options.store_endpoint.empty()) {
      throw Error("create accelerator", "rank " + std::to_string(s.rank),
                  "world size " + std::to_string(s.world) +
                      " needs a rendezvous store: set ACCEL_STORE_ENDPOINT (accel-launch does)");
    }
    kv = worker::OpenKv(s.options.store_endpoint, s.options.rdzv_token, s.options.run_id,
                        static_cast<int>(attempt));
    if (regroup && !s.options.generation_file.empty()) {
      // A newer generation ends every wait for a key (shared-memory discovery, Gloo's
      // addresses, NCCL's id) within a slice: the caller regroups at it.
      kv = worker::MakeInterruptibleKv(std::move(kv), NewerGenerationCheck(s), kRegroupSlice);
    }
  }
  std::unique_ptr<Communicator> comm =
      worker::MakeCommunicator(s.backend, s.device, spec, kv.get());
  if (s.progress) comm = worker::WithProgress(std::move(comm), s.progress);
  // Every collective but the DDP buckets' (which use the communicator underneath) first waits for
  // the buckets launched before it: issued from inside backward, it keeps one order on every rank.
  auto ordered = std::make_unique<worker::OrderedCommunicator>(std::move(comm), [&s] {
    if (s.grad_sync) s.grad_sync->OrderCollective();
  });
  std::lock_guard<std::mutex> lock(s.comm_mu);
  s.kv = std::move(kv);
  s.ddp_comm = &ordered->inner();
  s.comm = std::move(ordered);
}

void ResumeData(AcceleratorState& s, std::int64_t epoch, std::int64_t position) {
  if (!s.sampler) return;
  s.sampler->Resume(epoch, position, s.world, s.rank);
  s.pass_id = -1;  // the next batch starts a pass there
  s.pass_done = 0;
  s.window_samples = 0;
}

}  // namespace internal

Accelerator::Accelerator() : Accelerator(Options::FromEnv()) {}

Accelerator::Accelerator(Options options) : state_(std::make_unique<internal::AcceleratorState>()) {
  InstallTerminateHandler();
  auto& s = *state_;
  if (auto problems = options.Validate(); !problems.empty()) {
    throw Error("create accelerator", "", "invalid options: " + Join(problems));
  }
  s.options = options;
  ResolveWorld(options, s);

  // torch::cuda::device_count is the same call in LibTorch 1.13 and 2.x (0 without CUDA).
  const int gpus = options.cpu ? 0 : static_cast<int>(torch::cuda::device_count());
  if (gpus > 0) {
    s.device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(s.local_rank % gpus));
  }
  s.precision = options.mixed_precision;
  if (s.precision == MixedPrecision::kFp16 && !s.device.is_cuda()) {
    s.precision = MixedPrecision::kNo;
    if (s.local_rank == 0) {
      std::cerr << "[accel] mixed_precision=fp16 needs a CUDA device; training on CPU in fp32 "
                   "(bf16 works on CPU)\n";
    }
  }
  if (!s.device.is_cuda() && s.local_rank == 0) {
    const std::string notice =
        worker::BlasContentionNotice(worker::FindLoadedBlas(), at::get_num_threads());
    if (!notice.empty()) std::cerr << notice << "\n";
  }
  const bool scale =
      options.loss_scaling == LossScaling::kDynamic ||
      (options.loss_scaling == LossScaling::kAuto && s.precision == MixedPrecision::kFp16);
  if (scale) {
    s.scaler.emplace(worker::LossScalerOptions{options.init_scale, options.growth_factor,
                                               options.backoff_factor, options.growth_interval},
                     s.device);
  }

  s.group_id = g_groups.fetch_add(1);
  s.backend = worker::ChooseBackend(options.backend, s.device, s.world_from_mpi);
  if (s.world > 1 && (s.backend == Backend::kGloo || s.backend == Backend::kMpi) &&
      s.device.is_cuda()) {
    throw Error(
        "create accelerator", "",
        std::string("backend ") + ToString(s.backend) +
            " takes CPU tensors but the device is CUDA: use nccl or ACCELERATE_USE_CPU=true");
  }
  if (!options.progress_file.empty()) {
    s.progress = std::make_shared<worker::ProgressFile>(options.progress_file);
  }
  if (std::optional<worker::Generation> joining = internal::JoiningGeneration(s)) {
    // An in-place job's new machine: the job's state. Watched from the start, so that a change
    // while it joins ends its wait (it then joins the newer generation).
    s.generation = joining->number;
    internal::StartGenerationWatch(s);
    internal::JoinRunningJob(s, *joining);
  } else {
    // The store namespace of this generation (joins raise it; the restart count alone does not).
    internal::ConnectGroup(s, EnvInt(env::kStoreAttempt, EnvInt(env::kRestartCount, 0)),
                           "pg" + std::to_string(s.group_id) + "/");
    internal::StartGenerationWatch(s);
  }
}

Accelerator::~Accelerator() {
  state_->watch.reset();  // it aborts the communicator: stop it first
  // GradSync hooks reference the communicator: drop them first.
  state_->grad_sync.reset();
}

const c10::Device& Accelerator::device() const { return state_->device; }
int Accelerator::process_index() const { return state_->rank; }
int Accelerator::local_process_index() const { return state_->local_rank; }
int Accelerator::num_processes() const { return state_->world; }
MixedPrecision Accelerator::mixed_precision() const { return state_->precision; }
int Accelerator::gradient_accumulation_steps() const {
  return state_->options.gradient_accumulation_steps;
}
const Options& Accelerator::options() const { return state_->options; }
Communicator& Accelerator::communicator() { return *state_->comm; }

void Accelerator::PrepareModule(std::shared_ptr<torch::nn::Module> module) {
  auto& s = *state_;
  if (!module) throw Error("prepare", "module", "null module");
  ++s.state_version;  // compiled steps capture the new module's tensors
  for (const auto& m : s.modules) {
    // A second set of DDP hooks would all-reduce (and average) every gradient twice.
    if (m == module) throw Error("prepare", "module " + module->name(), "already prepared");
  }
  module->to(s.device);
  if (internal::LoadJoinedModule(s, *module)) {
    // joined a running job: the module holds the job's state, received from its ranks
  } else if (s.world > 1) {
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> tensors = module->parameters();
    for (const auto& b : module->buffers()) tensors.push_back(b);
    for (auto& t : tensors) {
      at::Tensor data = t.detach();
      if (data.is_contiguous()) {
        s.comm->Broadcast(data, 0, s.options.collective_timeout);
      } else {
        at::Tensor copy = data.contiguous();
        s.comm->Broadcast(copy, 0, s.options.collective_timeout);
        data.copy_(copy);
      }
    }
  }
  s.modules.push_back(std::move(module));
  if (s.world > 1) PrepareDdp(s);
}

torch::optim::Optimizer& Accelerator::prepare(torch::optim::Optimizer& optimizer) {
  auto& opts = state_->optimizers;
  if (std::find(opts.begin(), opts.end(), &optimizer) == opts.end()) {
    internal::LoadJoinedOptimizer(*state_, optimizer);
    opts.push_back(&optimizer);
  }
  return optimizer;
}

std::shared_ptr<DistributedSampler> Accelerator::MakeSampler(std::int64_t size, bool shuffle,
                                                             std::uint64_t seed) {
  auto sampler =
      std::make_shared<DistributedSampler>(size, num_processes(), process_index(), shuffle, seed);
  state_->sampler = sampler;  // the loader recover() and save_state follow
  state_->pass_id = -1;
  internal::ResumeJoinedData(*state_);
  return sampler;
}

DataLoader Accelerator::prepare_loader(at::Tensor data, at::Tensor target, std::int64_t batch_size,
                                       bool shuffle, std::uint64_t seed) {
  std::shared_ptr<DistributedSampler> sampler = MakeSampler(data.size(0), shuffle, seed);
  const DistributedSampler* key = sampler.get();
  return DataLoader(std::move(sampler), batch_size,
                    DataLoader::TensorFetch(std::move(data), std::move(target)), device(),
                    [this, key](bool last, std::int64_t samples) { OnBatch(key, last, samples); });
}

void Accelerator::OnBatch(const DistributedSampler* sampler, bool last, std::int64_t samples) {
  auto& s = *state_;
  s.end_of_data = last;
  if (s.progress) s.progress->AddSamples(samples);
  if (sampler != s.sampler.get()) return;  // an older loader's: not followed
  if (s.sampler->pass() != s.pass_id) {    // the first batch of a pass
    s.pass_id = s.sampler->pass();
    s.pass_epoch = s.sampler->epoch();
    s.pass_start = s.sampler->start();
    s.pass_world = s.sampler->num_replicas();
    s.pass_done = 0;
    s.window_samples = 0;
  }
  s.window_samples += samples;
}

AccumulateGuard Accelerator::accumulate() {
  auto& s = *state_;
  if (s.end_of_data) {
    s.micro_step = 0;
    s.sync = true;
  } else {
    ++s.micro_step;
    s.sync = s.micro_step % s.options.gradient_accumulation_steps == 0;
  }
  return AccumulateGuard(this, ++s.micro_id, s.sync);
}

AccumulateGuard::~AccumulateGuard() {
  if (acc_ != nullptr) acc_->EndMicroStep(id_);
}

void Accelerator::EndMicroStep(std::int64_t id) {
  // Outside accumulate() every backward syncs and every step() steps.
  if (state_->micro_id == id) state_->sync = true;
}

bool Accelerator::sync_gradients() const { return state_->sync; }

Accelerator::AutocastScope::AutocastScope(const Accelerator& acc) {
  const auto& s = *acc.state_;
  c10::ScalarType dtype;
  if (s.precision == MixedPrecision::kFp16 && s.device.is_cuda()) {
    kind_ = 1;
    dtype = at::kHalf;
  } else if (s.precision == MixedPrecision::kBf16) {
    kind_ = s.device.is_cuda() ? 1 : 2;
    dtype = at::kBFloat16;
  } else {
    return;
  }
  const auto type = kind_ == 1 ? c10::DeviceType::CUDA : c10::DeviceType::CPU;
  prev_enabled_ = worker::compat::AutocastEnabled(type);
  prev_dtype_ = static_cast<int>(worker::compat::AutocastDtype(type));
  worker::compat::SetAutocastEnabled(type, true);
  worker::compat::SetAutocastDtype(type, dtype);
  at::autocast::increment_nesting();
}

Accelerator::AutocastScope::~AutocastScope() {
  if (kind_ == 0) return;
  const auto type = kind_ == 1 ? c10::DeviceType::CUDA : c10::DeviceType::CPU;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  worker::compat::SetAutocastEnabled(type, prev_enabled_);
  worker::compat::SetAutocastDtype(type, static_cast<c10::ScalarType>(prev_dtype_));
}

at::Tensor Accelerator::gather(const at::Tensor& tensor) {
  at::Tensor all = state_->comm->AllGather(tensor.contiguous(), state_->options.collective_timeout);
  return tensor.dim() == 0 ? all : all.flatten(0, 1);
}

at::Tensor Accelerator::reduce(const at::Tensor& tensor, ReduceOp op) {
  // Checked here, before any communicator sees it: a rank-symmetric mistake stays an ordinary
  // exception instead of aborting the group.
  if (!tensor.defined() || tensor.scalar_type() == at::kBool || tensor.is_complex()) {
    throw Error("reduce", "tensor",
                !tensor.defined()
                    ? std::string("is undefined")
                    : std::string("has dtype ") + c10::toString(tensor.scalar_type()) +
                          ", which cannot be reduced; convert it first (e.g. "
                          "t.to(at::kInt) for flags)");
  }
  at::Tensor out = tensor.clone(at::MemoryFormat::Contiguous);
  state_->comm->AllReduce(out, op, state_->options.collective_timeout);
  return out;
}

void Accelerator::wait_for_everyone() { state_->comm->Barrier(state_->options.collective_timeout); }

void Accelerator::PrintLine(const std::string& line) { std::cout << line << std::endl; }

double Accelerator::loss_scale() const {
  state_->FinishScalerIteration();  // the update an optimizer step made is due
  return state_->scaler ? state_->scaler->scale() : 1.0;
}
std::int64_t Accelerator::step_count() const { return state_->steps; }
std::int64_t Accelerator::skipped_steps() const {
  internal::SyncDeviceCounters(*state_);
  return state_->skipped;
}

}  // namespace accel
