// AcceleratorState: everything an Accelerator owns, shared by accelerator.cc (training loop) and
// state_io.cc (save_state / load_state). Internal; not installed.
#ifndef ACCEL_WORKER_ACCELERATOR_STATE_H_
#define ACCEL_WORKER_ACCELERATOR_STATE_H_

#include <c10/core/Device.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "accel/communicator.h"
#include "accel/options.h"
#include "worker/src/amp/loss_scaler.h"
#include "worker/src/ddp/grad_sync.h"
#include "worker/src/progress_file.h"
#include "worker/src/store/kv.h"

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace accel::internal {

struct AcceleratorState {
  Options options;
  int rank = 0;
  int local_rank = 0;
  int world = 1;
  bool world_from_mpi = false;  // rank/world came from OMPI_*/PMI_* (started by mpirun/srun)
  c10::Device device{c10::kCPU};
  MixedPrecision precision = MixedPrecision::kNo;

  std::unique_ptr<worker::Kv> kv;                  // null for a world of 1 and MPI
  std::unique_ptr<Communicator> comm;              // never null; an OrderedCommunicator
  Communicator* ddp_comm = nullptr;                // the one under comm: DDP buckets only
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
};

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
