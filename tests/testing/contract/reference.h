// The fuzzer's reference: what PyTorch's semantics give for a Sequence, computed in one process
// with plain LibTorch (no libaccel), simulating every rank's replica (all identical):
//
// - DistributedDataParallel (find_unused_parameters=True, no_sync() on micro-steps that do not
//   sync): a synchronising backward leaves .grad = (.grad before the window) + the average over
//   ranks of each rank's window-local gradient sum (a rank that did not use a parameter adds
//   zeros); a parameter no rank used and that had no .grad keeps none. Between synchronising
//   backwards the gradients are rank-local (not compared). opt.zero_grad() by hand (LibTorch
//   1.13: detach_ + zero_) clears what the window accumulated for its parameters. The average
//   is computed as sum over ranks of (prev / world + the window's gradients of loss /
//   (N x world)): PyTorch's value, summed in the order libaccel's reduction sums (rank order
//   within a machine, then machine order), so that float32 rounding stays far below the 1e-6
//   compared even where the ranks' terms cancel (DDP itself sums (prev + local) / world, in
//   its backend's order: PyTorch's answer is only defined up to that rounding).
// - torch.cuda.amp.GradScaler: the loss times the scale; per optimizer, its gradients unscaled
//   once per iteration (unscale_, or step), its own found_inf, recorded at that unscale (before
//   clip_grad_norm_ rewrites the gradients), decides whether it steps; update()
//   once per iteration (here: when the next backward starts, before save_state and when read).
// - HF accelerate: gradient_accumulation_steps micro-steps (every N-th syncs), the loss divided
//   by N, step() and clip_grad_norm() do nothing on a micro-step that does not sync, nor after
//   one whose gradients are not synchronised yet (its guard ended early); clip_grad_norm
//   unscales per optimizer first.
// - load_state: as a process restarted from the checkpoint (parameters, optimizer state, scale,
//   counters; no gradients).
#ifndef ACCEL_TESTS_TESTING_CONTRACT_REFERENCE_H_
#define ACCEL_TESTS_TESTING_CONTRACT_REFERENCE_H_

#include <torch/optim/sgd.h>

#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "tests/testing/contract/sequence.h"

namespace accel::contract {

// The optimizers both sides use: A = SGD(lr 0.05, momentum 0.9), B = SGD(lr 0.1).
std::unique_ptr<torch::optim::SGD> MakeOptimizer(const Sequence& seq, FuzzNet& net, int which);

class Reference {
 public:
  // `per_machine`: ranks per machine (consecutive; 0: all on one), for the order of the sum.
  Reference(const Sequence& seq, int world, FuzzNet net, int per_machine = 0);

  // accelerate's GradientState: starts a micro-step, returns whether it syncs.
  bool Accumulate();
  // `sync_for_step`: the current micro-step's sync flag (true outside a live guard).
  void ZeroByHand();
  void Backward(bool sync, int micro, int k, int inf_rank);
  double Clip(bool sync_for_step, double max_norm);
  bool Step(bool sync_for_step, int which);
  void Save();
  void Load();
  double scale();

  FuzzNet& net() { return net_; }
  // Whether the gradients are comparable (the last backward synchronised).
  bool synced() const { return !unsynced_; }
  std::int64_t micro_step() const { return micro_step_; }
  std::int64_t& mutable_micro_step() { return micro_step_; }

 private:
  void FinishIteration();
  // Unscales the gradients of `params` not unscaled yet this iteration; returns whether any of
  // them was not finite (GradScaler's found_inf of that unscale).
  bool Unscale(const std::vector<at::Tensor>& params);
  // GradScaler.unscale_(optimizer `which`) once per iteration: its found_inf is recorded then
  // (before clip_grad_norm_ touches the gradients) and decides its step.
  bool UnscaleOptimizer(int which);
  void ForgetUnscales();

  Sequence seq_;
  int world_;
  int per_machine_;
  FuzzNet net_;
  std::vector<at::Tensor> trainable_;  // deduplicated
  std::vector<std::unique_ptr<torch::optim::SGD>> opts_;
  std::vector<std::vector<at::Tensor>> local_;  // [rank][param]: this window's gradient sums
  std::vector<bool> used_;
  bool window_open_ = false;  // a backward ran since the last synchronising one
  bool unsynced_ = false;
  std::int64_t micro_step_ = 0;
  double scale_ = 1.0;
  int tracker_ = 0;
  bool pending_ = false;
  bool iteration_found_ = false;
  std::unordered_set<const c10::TensorImpl*> unscaled_;
  std::vector<std::optional<bool>> opt_found_;  // [optimizer]: found_inf of its unscale_
  // save_state's snapshot.
  struct Snapshot {
    std::vector<at::Tensor> params;
    std::vector<std::string> opts;
    double scale = 1.0;
    int tracker = 0;
    std::int64_t micro_step = 0;
  } saved_;
};

}  // namespace accel::contract

#endif  // ACCEL_TESTS_TESTING_CONTRACT_REFERENCE_H_
