// AcceleratorState: everything an Accelerator owns, shared by accelerator.cc (training loop) and
// state_io.cc (save_state / load_state). Internal; not installed.
#ifndef ACCEL_WORKER_ACCELERATOR_STATE_H_
#define ACCEL_WORKER_ACCELERATOR_STATE_H_

#include <c10/core/Device.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <memory>
#include <optional>
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
  std::unique_ptr<Communicator> comm;              // never null
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

  // This sync step's unscaling: the parameters whose gradients are unscaled already (by
  // clip_grad_norm or step) and whether any of them had an inf/NaN.
  std::unordered_set<const c10::TensorImpl*> unscaled;
  at::Tensor found_inf;

  std::int64_t steps = 0;
  std::int64_t skipped = 0;
};

}  // namespace accel::internal

#endif  // ACCEL_WORKER_ACCELERATOR_STATE_H_
