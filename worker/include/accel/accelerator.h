// accel::Accelerator: accelerate's training model for LibTorch C++.
//
// clang-format off
//   accel::Accelerator acc;                   // reads the env contract; bare = world of 1
//   auto model = acc.prepare(Net{});          // to device, broadcast from rank 0, DDP hooks
//   torch::optim::AdamW opt(model->parameters());
//   acc.prepare(opt);                         // registered for save_state / load_state
//   auto loader = acc.prepare_loader(data, targets, /*batch_size=*/64);
//   for (int epoch = 0; epoch < epochs; ++epoch) {
//     loader.set_epoch(epoch);
//     for (const auto& batch : loader) {
//       auto sync = acc.accumulate(model);    // all-reduce only on every N-th micro-step
//       auto loss = acc.autocast([&] {
//         return loss_fn(model->forward(batch.data), batch.target);
//       });
//       acc.backward(loss);                   // / N, x loss scale; buckets all-reduce during it
//       acc.clip_grad_norm(1.0);              // optional; sync steps only
//       acc.step(opt);                        // sync steps: unscale, inf check, step or skip,
//                                             // opt.zero_grad()
//     }
//   }
//   acc.save_state("ckpt");                   // collective
//   acc.print("done after ", acc.step_count(), " steps");
// clang-format on
//
// Ownership: the Accelerator owns its communicator and the DDP state of every prepared module;
// it keeps shared ownership of prepared modules and a non-owning pointer to each optimizer given
// to prepare()/step() (the caller keeps optimizers alive as long as the Accelerator).
// Threading: use an Accelerator from one thread. Collective calls (prepare, step on a sync step,
// gather, reduce, wait_for_everyone, save_state, load_state) must be made by every rank in the
// same order; each has the deadline options().collective_timeout. Errors throw accel::Error.
#ifndef ACCEL_ACCELERATOR_H_
#define ACCEL_ACCELERATOR_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "accel/communicator.h"
#include "accel/compiled_step.h"
#include "accel/data.h"
#include "accel/error.h"
#include "accel/error_file.h"
#include "accel/options.h"

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace accel {

namespace internal {
struct AcceleratorState;

// IsModule<M>: M is a torch module holder (TORCH_MODULE(Net) → Net) or shared_ptr<a Module>.
template <typename M, typename = void>
struct IsModule : std::false_type {};
template <typename M>
struct IsModule<M, std::void_t<typename M::ContainedType>>
    : std::bool_constant<std::is_base_of_v<torch::nn::ModuleHolder<typename M::ContainedType>, M>> {
  static std::shared_ptr<torch::nn::Module> Ptr(const M& m) { return m.ptr(); }
};
template <typename T>
struct IsModule<std::shared_ptr<T>, void> : std::is_base_of<torch::nn::Module, T> {
  static std::shared_ptr<torch::nn::Module> Ptr(const std::shared_ptr<T>& m) { return m; }
};
}  // namespace internal

class Accelerator;

// Returned by Accelerator::accumulate, which starts a micro-step. The micro-step is a sync step
// (gradients all-reduced during backward, optimizer stepped by step()) iff it is the N-th
// micro-step since the last sync, or the last batch of the loader's epoch. It lasts as long as
// its guard (or until the next accumulate()): once the guard is gone, backward() syncs and
// step() steps again, as outside accumulate().
class [[nodiscard]] AccumulateGuard {
 public:
  AccumulateGuard(AccumulateGuard&& other) noexcept
      : acc_(other.acc_), id_(other.id_), sync_(other.sync_) {
    other.acc_ = nullptr;
  }
  AccumulateGuard& operator=(AccumulateGuard&&) = delete;
  AccumulateGuard(const AccumulateGuard&) = delete;
  ~AccumulateGuard();
  // True when this micro-step communicates and steps.
  bool sync_gradients() const { return sync_; }

 private:
  friend class Accelerator;
  AccumulateGuard(Accelerator* acc, std::int64_t id, bool sync) : acc_(acc), id_(id), sync_(sync) {}
  Accelerator* acc_;  // null once moved from
  std::int64_t id_;   // which micro-step
  bool sync_;
};

class Accelerator {
 public:
  // Reads Options::FromEnv().
  Accelerator();
  // Validates `options` (throws accel::Error listing every problem), picks the device (CUDA
  // device local_rank when CUDA is available and !cpu, else CPU; fp16 on CPU becomes fp32 with a
  // one-line notice on stderr), connects the communicator (world > 1; blocks up to
  // options.connect_timeout) and opens the progress file.
  explicit Accelerator(Options options);
  ~Accelerator();
  Accelerator(const Accelerator&) = delete;
  Accelerator& operator=(const Accelerator&) = delete;

  // --- who and where ----------------------------------------------------------------------
  const c10::Device& device() const;
  int process_index() const;        // global rank
  int local_process_index() const;  // rank on this machine
  int num_processes() const;        // world size
  bool is_main_process() const { return process_index() == 0; }
  bool is_local_main_process() const { return local_process_index() == 0; }
  // The precision in effect (kFp16 requested on CPU reads kNo).
  MixedPrecision mixed_precision() const;
  int gradient_accumulation_steps() const;
  const Options& options() const;
  // The process group (a local one for a world of 1). Same ordering rules as above.
  Communicator& communicator();

  // --- preparing ----------------------------------------------------------------------------
  // Moves `module` to device(), broadcasts its parameters and buffers from rank 0 and (world > 1)
  // installs DDP gradient hooks. Takes a module holder (TORCH_MODULE(Net) → Net) or a
  // shared_ptr to a module; returns the same module. Collective. Throws when the module was
  // already prepared. A parameter that gets no gradient on a sync step (unused by this rank's
  // forward) contributes zeros to the average, and backward() still leaves it the averaged
  // (defined) gradient when another rank used it; when no rank did, it has none.
  template <typename M, typename = std::enable_if_t<internal::IsModule<M>::value>>
  M prepare(M module) {
    PrepareModule(internal::IsModule<M>::Ptr(module));
    return module;
  }
  // Registers `optimizer` for save_state/load_state. Returns it.
  torch::optim::Optimizer& prepare(torch::optim::Optimizer& optimizer);

  // Returns a loader over this rank's shard of the tensor dataset (row i of data/target is
  // sample i); batches arrive on device(). Same number of batches on every rank. The loader tells
  // this Accelerator when an epoch's last batch is handed out (a forced sync), so it must not
  // outlive it.
  DataLoader prepare_loader(at::Tensor data, at::Tensor target, std::int64_t batch_size,
                            bool shuffle = true, std::uint64_t seed = 0);
  // Same over any dataset with size() (size_t or optional<size_t>) and get(size_t) returning an
  // example with tensor members .data and .target (torch::data::Example<> fits).
  template <typename Dataset>
  DataLoader prepare_loader(std::shared_ptr<Dataset> dataset, std::int64_t batch_size,
                            bool shuffle = true, std::uint64_t seed = 0);

  // --- training step ------------------------------------------------------------------------
  // Starts a micro-step for all prepared modules (the argument is accepted for accelerate's
  // spelling). See AccumulateGuard.
  template <typename M>
  AccumulateGuard accumulate(const M& /*module*/) {
    return accumulate();
  }
  AccumulateGuard accumulate();
  // True when the current micro-step (the last accumulate()'s, while its guard lives) is a sync
  // step; true outside accumulate().
  bool sync_gradients() const;

  // Runs fn() under autocast for mixed_precision() on device() (fp16 on CUDA, bf16 on CUDA or
  // CPU); plain fn() otherwise. Returns what fn returns.
  template <typename Fn>
  auto autocast(Fn&& fn) -> decltype(fn()) {
    AutocastScope scope(*this);
    return std::forward<Fn>(fn)();
  }

  // Back-propagates loss x loss_scale() / (N x world size): the gradients are summed over ranks
  // (each prepared module's .grad is a view into a DDP bucket), so they end up averaged. On sync
  // steps, DDP buckets all-reduce as their gradients become ready (overlapping the rest of
  // backward). Prepared modules must get their gradients through backward(): a plain
  // loss.backward() on them throws accel::Error (world > 1). A parameter no rank used since the
  // last step() has no gradient afterwards (an optimizer skips it, as in a single process).
  void backward(const at::Tensor& loss);

  // On sync steps: waits for gradient all-reduce, unscales, clips the global gradient norm of all
  // prepared modules to max_norm and returns the norm before clipping (inf/NaN on overflow).
  // On other micro-steps does nothing and returns 0.
  double clip_grad_norm(double max_norm);

  // On sync steps: with loss scaling, unscales every gradient of `optimizer` that
  // clip_grad_norm did not, agrees with every rank whether any gradient is inf/NaN (all-reduce
  // MAX), steps `optimizer` or skips, updates the loss scale; without, steps `optimizer`. Then
  // clears the gradients of `optimizer`'s parameters: those of prepared modules (world > 1) are
  // zeroed in place, one fill per DDP bucket, and stay defined; the others as
  // optimizer.zero_grad() does (LibTorch 2.x makes them undefined, 1.13 fills them with zeros).
  // Bumps the step counter (progress file). Returns whether the optimizer stepped. Other
  // micro-steps: returns false and does nothing.
  bool step(torch::optim::Optimizer& optimizer);
  // A whole step (autocast(forward), backward, clip_grad_norm when max_grad_norm > 0, step) that
  // this Accelerator captures in a CUDA graph where it can (accel/compiled_step.h). Prepares
  // `optimizer`. The CompiledStep must not outlive this Accelerator.
  CompiledStep compile_step(torch::optim::Optimizer& optimizer, CompiledStep::Forward forward,
                            double max_grad_norm = 0);

  // --- collectives and output ---------------------------------------------------------------
  // Returns every rank's tensor concatenated along dim 0 (0-dim tensors: stacked), rank order.
  at::Tensor gather(const at::Tensor& tensor);
  // Returns `tensor` reduced over all ranks (a new tensor; the input is unchanged).
  at::Tensor reduce(const at::Tensor& tensor, ReduceOp op = ReduceOp::kSum);
  // Blocks until every rank arrives (deadline: collective_timeout).
  void wait_for_everyone();
  // Prints the arguments (operator<<) and a newline to stdout on the main process only.
  template <typename... Args>
  void print(const Args&... args) {
    if (!is_main_process()) return;
    std::ostringstream out;
    (out << ... << args);
    PrintLine(out.str());
  }

  // --- state --------------------------------------------------------------------------------
  // Saves prepared modules, registered optimizers, the loss scaler, the step counters, the data
  // position of the last prepared loader and every rank's RNG state under `dir`, written into
  // "<dir>.tmp" and then renamed, so a crash at any point leaves the last complete checkpoint in
  // "<dir>" or "<dir>.old". Collective. `dir` must be on a filesystem every local rank sees;
  // machines may share it (one process writes the shared files) or each have their own.
  void save_state(const std::string& dir);
  // Returns whether every rank finds a checkpoint to resume from under `dir` ("<dir>", or
  // "<dir>.old" when a crash interrupted a save): load_state's rule. Collective. False, alone,
  // in a process that joined a running elastic job and has not stepped yet (it holds the job's
  // state; load_state then does nothing either).
  bool has_state(const std::string& dir);
  // Restores what save_state wrote (same modules and optimizers, in the same order; any world
  // size): the newest checkpoint every rank has, from "<dir>" or "<dir>.old". The last prepared
  // loader continues where the checkpoint's data stood (its epoch: loader.sampler().epoch()),
  // split over this world; a rank the saving world did not have keeps its own RNG. Collective.
  void load_state(const std::string& dir);

  // --- elastic: in-place recovery (docs/libaccel.md "In-place recovery") ---------------------
  // Call after a collective threw accel::Error. Under an elastic launcher
  // (ACCEL_GENERATION_FILE) waits up to options().connect_timeout for the next membership
  // generation, drops the micro-steps of the step in flight (gradients, their samples, the CPU
  // RNG back to the last completed step), connects the new world (rank and world size may
  // change), agrees with every rank on the newest completed step (broadcast to a rank one step
  // behind) and re-splits the rest of the epoch over the new world. Returns true: continue the
  // loop from loader.sampler().epoch(); the prepared loader resumes at the first sample no
  // completed step trained on. Returns false, changing nothing, without a generation file.
  // Throws accel::Error when no newer generation comes in time. Collective in the new world.
  // A worker the launcher starts into a running job (the file says joining) does not call it:
  // its constructor joins, and its prepare calls load the state the running ranks send.
  bool recover();
  // The membership generation this process trains in (0 without an elastic launcher).
  std::int64_t generation() const;

  // The current loss scale (1.0 without loss scaling), for progress bars.
  double loss_scale() const;
  // Optimizer steps taken (sync steps, skipped ones included) and skipped by overflow.
  std::int64_t step_count() const;
  std::int64_t skipped_steps() const;

 private:
  class AutocastScope {
   public:
    explicit AutocastScope(const Accelerator& acc);
    ~AutocastScope();
    AutocastScope(const AutocastScope&) = delete;
    AutocastScope& operator=(const AutocastScope&) = delete;

   private:
    int kind_ = 0;  // 0 none, 1 CUDA, 2 CPU
    bool prev_enabled_ = false;
    int prev_dtype_ = 0;
  };

  friend class AccumulateGuard;
  void PrepareModule(std::shared_ptr<torch::nn::Module> module);
  void PrintLine(const std::string& line);
  void OnBatch(const DistributedSampler* sampler, bool last, std::int64_t samples);
  // The sampler a prepared loader shares with this Accelerator (recover() re-splits it).
  std::shared_ptr<DistributedSampler> MakeSampler(std::int64_t size, bool shuffle,
                                                  std::uint64_t seed);
  void EndMicroStep(std::int64_t id);
  // Unscales the gradients of `params` not unscaled yet this iteration; returns found_inf over all
  // of `params` (1 when any had an inf/NaN).
  at::Tensor UnscaleOnce(const std::vector<at::Tensor>& params);
  void ZeroGrads(torch::optim::Optimizer& optimizer);

  std::unique_ptr<internal::AcceleratorState> state_;
};

namespace internal {
template <typename Dataset>
std::int64_t DatasetSize(const Dataset& dataset) {
  auto size = dataset.size();
  if constexpr (std::is_integral_v<decltype(size)>) {
    return static_cast<std::int64_t>(size);
  } else {
    if (!size.has_value()) throw Error("prepare_loader", "dataset", "size() is unknown");
    return static_cast<std::int64_t>(*size);
  }
}
// Stacks examples into one Batch (defined in the library; needs at::stack).
Batch StackExamples(std::vector<at::Tensor> data, std::vector<at::Tensor> target);
}  // namespace internal

template <typename Dataset>
DataLoader Accelerator::prepare_loader(std::shared_ptr<Dataset> dataset, std::int64_t batch_size,
                                       bool shuffle, std::uint64_t seed) {
  const std::int64_t size = internal::DatasetSize(*dataset);
  DataLoader::FetchFn fetch = [dataset](const std::vector<std::int64_t>& indices) {
    std::vector<at::Tensor> data, target;
    data.reserve(indices.size());
    target.reserve(indices.size());
    for (std::int64_t i : indices) {
      auto example = dataset->get(static_cast<std::size_t>(i));
      data.push_back(example.data);
      target.push_back(example.target);
    }
    return internal::StackExamples(std::move(data), std::move(target));
  };
  std::shared_ptr<DistributedSampler> sampler = MakeSampler(size, shuffle, seed);
  const DistributedSampler* key = sampler.get();
  return DataLoader(std::move(sampler), batch_size, std::move(fetch), device(),
                    [this, key](bool last, std::int64_t samples) { OnBatch(key, last, samples); });
}

}  // namespace accel

#endif  // ACCEL_ACCELERATOR_H_
