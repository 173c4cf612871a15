// AcceleratorState: everything an Accelerator owns, shared by accelerator.cc (training loop) and
// state_io.cc (save_state / load_state). Internal; not installed.
#ifndef ACCEL_WORKER_ACCELERATOR_STATE_H_
#define ACCEL_WORKER_ACCELERATOR_STATE_H_

#include <c10/core/Device.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "accel/communicator.h"
#include "accel/data.h"
#include "accel/options.h"
#include "worker/src/amp/loss_scaler.h"
#include "worker/src/ddp/grad_sync.h"
#include "worker/src/elastic/generation.h"
#include "worker/src/progress_file.h"
#include "worker/src/store/kv.h"

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim
namespace torch::serialize {
class InputArchive;
class OutputArchive;
}  // namespace torch::serialize

namespace accel::internal {

struct JoinedState;  // worker/src/elastic/join.cc

struct AcceleratorState {
  Options options;
  int rank = 0;
  int local_rank = 0;
  int world = 1;
  bool world_from_mpi = false;  // rank/world came from OMPI_*/PMI_* (started by mpirun/srun)
  c10::Device device{c10::kCPU};
  MixedPrecision precision = MixedPrecision::kNo;

  Backend backend = Backend::kAuto;    // as ChooseBackend resolved it
  int group_id = 0;                    // this process's n-th Accelerator: its store keys
  std::unique_ptr<worker::Kv> kv;      // null for a world of 1 and MPI
  std::unique_ptr<Communicator> comm;  // never null; an OrderedCommunicator
  Communicator* ddp_comm = nullptr;    // the one under comm: DDP buckets only
  // Guards swapping `comm` against the generation watch's Abort (recover()).
  std::mutex comm_mu;
  std::optional<worker::LossScaler> scaler;        // set when loss scaling is on
  std::shared_ptr<worker::ProgressFile> progress;  // null without ACCEL_PROGRESS_FILE

  std::vector<std::shared_ptr<torch::nn::Module>> modules;
  // DDP over every prepared module's parameters (world > 1): one, so that all buckets are issued
  // in one order; rebuilt when another module is prepared.
  std::unique_ptr<worker::GradSync> grad_sync;
  std::vector<torch::optim::Optimizer*> optimizers;  // not owned

  // Accumulation (accelerate's GradientState).
  std::int64_t micro_step = 0;
  std::int64_t micro_id = 0;  // bumped by every accumulate(): which guard is current
  bool sync = true;
  bool end_of_data = false;

  // A backward that did not synchronise ran since the last one that did: step() skips
  // (accelerate's rule: the gradients are this rank's own).
  bool unsynced = false;

  // This iteration's loss scaling (GradScaler's per-optimizer state, reset by update()): which
  // parameters' gradients are unscaled already, in which group (one per unscale call), each
  // group's found_inf; the found_inf of the optimizers stepped or skipped, for the one
  // scale update of the iteration, which runs when the next iteration starts.
  std::unordered_map<const c10::TensorImpl*, std::size_t> unscaled;
  std::vector<at::Tensor> unscale_found;
  at::Tensor iteration_found;
  bool scale_update_pending = false;

  // Ends the loss-scaling iteration once an optimizer stepped or skipped: updates the scale
  // once and forgets what was unscaled. Called when a backward starts a new one, and before the
  // scale is read or saved.
  void FinishScalerIteration() {
    if (!scale_update_pending) return;  // no optimizer stepped yet: the iteration goes on
    if (scaler) scaler->Update(iteration_found);
    scale_update_pending = false;
    iteration_found = at::Tensor();
    unscaled.clear();
    unscale_found.clear();
  }

  std::int64_t steps = 0;
  std::int64_t skipped = 0;

  // Elastic (docs/libaccel.md "In-place recovery"). The last prepared loader's sampler and
  // the pass its batches belong to: where it started, over which world, and how many samples
  // per rank completed steps trained (`pass_done`) or the window in flight fetched.
  std::shared_ptr<DistributedSampler> sampler;
  std::int64_t pass_id = -1;  // the sampler's pass() the counts below belong to; -1 none yet
  std::int64_t pass_epoch = 0;
  std::int64_t pass_start = 0;
  int pass_world = 1;
  std::int64_t pass_done = 0;
  std::int64_t window_samples = 0;
  at::Tensor rng_at_step;  // the CPU generator's state when the last step completed
  std::int64_t generation = 0;
  std::unique_ptr<worker::GenerationWatch> watch;  // null without ACCEL_GENERATION_FILE
  // A process that joined a running job: the state it received, until its first step
  // (worker/src/elastic/join.h); null otherwise.
  std::shared_ptr<JoinedState> joined;

  // Compiled steps (accel/compiled_step.h): bumped whenever parameters or optimizer state may be
  // new tensors (prepare, load_state, recover), which drops their graphs; and the counters they
  // keep on the device, folded into steps/skipped/optimizer state by SyncDeviceCounters.
  std::int64_t state_version = 0;
  std::vector<std::weak_ptr<std::function<void()>>> device_syncs;
};

// Folds what compiled steps counted on the device (skipped steps, AdamW's step counts) into the
// host state. Synchronizes with the device when a compiled step is live.
inline void SyncDeviceCounters(AcceleratorState& s) {
  for (const auto& weak : s.device_syncs) {
    if (auto sync = weak.lock()) (*sync)();
  }
}

// The bookkeeping of a completed optimizer step (Accelerator::step's, and a compiled step's):
// the step counter, its samples, the RNG state recover() comes back to, the progress file.
void CompleteStep(AcceleratorState& s);

// Where the data stands: the epoch and the first position of its order that no completed step
// trained on; a finished epoch reads (epoch + 1, 0).
inline std::pair<std::int64_t, std::int64_t> DataPosition(const AcceleratorState& s) {
  if (!s.sampler) return {0, 0};
  if (s.pass_id < 0) return {s.sampler->epoch(), s.sampler->start()};
  const std::int64_t position = s.pass_start + s.pass_done * s.pass_world;
  if (position >= s.sampler->dataset_size()) return {s.pass_epoch + 1, 0};
  return {s.pass_epoch, position};
}

// Makes the next pass of the sampler start at `position` of `epoch`, split over this world.
void ResumeData(AcceleratorState& s, std::int64_t epoch, std::int64_t position);

// Connects s.comm (and s.kv) for s.rank / s.world in the store namespace of `attempt`, under
// key prefix `prefix`; wraps it with the progress file. `regroup` (recover() and a joiner, which
// set s.generation first): a generation newer than s.generation in the generation file ends the
// connect's store waits at once with accel::Error (its peers will never all arrive).
void ConnectGroup(AcceleratorState& s, std::int64_t attempt, const std::string& prefix,
                  bool regroup = false);

// The generation file's generation when it is newer than s.generation; nullopt otherwise.
std::optional<worker::Generation> NewerGeneration(const AcceleratorState& s);

// For MakeInterruptibleKv: says why when the generation file holds a generation newer than
// s.generation is now ("" otherwise); keeps only copies, so it outlives s.
std::function<std::string()> NewerGenerationCheck(const AcceleratorState& s);

// Takes `g`'s world: s.generation (under comm_mu, so that the watch no longer aborts for it),
// the rank and world in s, its options and the environment; aborts and drops the old group
// (DDP first). Throws accel::Error when this process's local rank is not in `g`.
void AdoptGeneration(AcceleratorState& s, const worker::Generation& g, const std::string& op);

// The checkpoint's accelerator.pt fields (state_io.cc): counters, scale, world, data position.
void WriteMeta(const AcceleratorState& s, torch::serialize::OutputArchive& meta);
// Restores them (not the world: a checkpoint loads at any world size).
void ReadMeta(AcceleratorState& s, torch::serialize::InputArchive& meta);

// Starts s.watch when options.generation_file is set: s.generation from the file (0 when it is
// not there yet), and a newer generation aborts s.comm (recovery.cc).
void StartGenerationWatch(AcceleratorState& s);

// (Re)builds the one GradSync over every prepared module's trainable parameters.
void PrepareDdp(AcceleratorState& s);

// Every parameter of the prepared modules, in module and registration order, each once (a tied
// parameter, registered under two names, is one tensor: synchronised, clipped and unscaled once).
inline std::vector<at::Tensor> PreparedParameters(const AcceleratorState& s) {
  std::vector<at::Tensor> out;
  std::unordered_set<const c10::TensorImpl*> seen;
  for (const auto& m : s.modules) {
    for (const auto& p : m->parameters()) {
      if (seen.insert(p.unsafeGetTensorImpl()).second) out.push_back(p);
    }
  }
  return out;
}

}  // namespace accel::internal

#endif  // ACCEL_WORKER_ACCELERATOR_STATE_H_
