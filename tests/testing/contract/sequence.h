// The differential fuzzer's vocabulary: a Sequence of calls a user of accel::Accelerator can
// write (tests/mp/worker/contract_test.cc), generated from a seed, identically on every rank,
// and the model and data they run on. Also the fixed sequences of issue 23's probes.
#ifndef ACCEL_TESTS_TESTING_CONTRACT_SEQUENCE_H_
#define ACCEL_TESTS_TESTING_CONTRACT_SEQUENCE_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>
#include <string>
#include <vector>

namespace accel::contract {

// One micro-step of the user's loop.
struct MicroStep {
  bool guard = false;             // inside `auto g = acc.accumulate(model)`
  bool guard_ends_early = false;  // the guard's scope closes before clip/step (misuse)
  bool zero_by_hand = false;      // opt.zero_grad() on every optimizer before backward
  int backwards = 1;              // acc.backward() calls in this micro-step (1 or 2)
  bool throw_backward = false;    // acc.backward(loss.detach()) first: must throw, is caught
  int inf_rank = -1;              // rank whose loss is multiplied by inf (loss scaling only)
  bool clip = false;              // acc.clip_grad_norm(0.5)
  bool step = true;               // acc.step(opt) for every optimizer
  bool reverse_steps = false;     // B before A
  int state = 0;                  // 1: save_state after the steps; 2: load_state there
};

struct Sequence {
  std::uint64_t seed = 0;
  int accumulation = 1;  // gradient_accumulation_steps
  bool scaling = false;  // dynamic loss scaling (CPU, fp32)
  double init_scale = 1024;
  int optimizers = 1;  // 1 or 2
  // Which parameters each optimizer gets. 0: every trainable one (one optimizer) / A {a, b},
  // B {c, t} (two); 1: only {b, t} (a and c in no optimizer) / A {b}, B {t}.
  int assignment = 0;
  bool tied = false;  // t registered twice (a tied parameter)
  std::vector<MicroStep> steps;

  std::string Describe() const;
  // Short class name for counting ("acc2+scale+2opt+tied+misuse+state+throw").
  std::string Kind() const;
};

// Generates sequence `seed` (deterministic; the same on every rank).
Sequence Generate(std::uint64_t seed);

// Issue 23's probes as sequences: "zerograd" (the standard LibTorch loop, opt.zero_grad() by
// hand), "frozen" (a requires grad but only b is in the optimizer), "guardstep" (a step after the
// guard of a micro-step that did not sync).
Sequence Probe(const std::string& name);

// a: Linear(4, 6) -> tanh -> frozen: Linear(6, 6) (no grad) -> tanh -> b: Linear(6, 3)
// (+ c: Linear(6, 3) when `use_c`) -> t -> t (t applied twice; registered twice when tied).
struct FuzzNetImpl : torch::nn::Module {
  explicit FuzzNetImpl(bool tied);
  at::Tensor forward(const at::Tensor& x, bool use_c);
  torch::nn::Linear a, frozen, b, c, t;
};
TORCH_MODULE(FuzzNet);

// The parameters optimizer `which` (0 = A, 1 = B) of `seq` gets, in a fixed order.
std::vector<at::Tensor> OptimizerParams(const Sequence& seq, FuzzNet& net, int which);

// Rank `rank`'s batch in micro-step `micro`, backward `k` (deterministic): inputs, targets,
// and whether c is used.
struct Batch {
  at::Tensor x, y;
  bool use_c = false;
};
Batch Data(const Sequence& seq, int rank, int micro, int k);

// The loss of rank `rank`'s data in micro-step `micro`, backward `k`: mse(net(x), y).
at::Tensor Loss(const Sequence& seq, FuzzNet& net, int rank, int micro, int k);

}  // namespace accel::contract

#endif  // ACCEL_TESTS_TESTING_CONTRACT_SEQUENCE_H_
