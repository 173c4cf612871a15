// The smallest model the Accelerator tests train: one Linear(3, 2), and world-of-one CPU options.
#ifndef ACCEL_TESTS_TESTING_TINY_MODEL_H_
#define ACCEL_TESTS_TESTING_TINY_MODEL_H_

#include <torch/nn/modules/linear.h>

#include "accel/options.h"

namespace accel::testing {

struct LinImpl : torch::nn::Module {
  LinImpl() : fc(register_module("fc", torch::nn::Linear(3, 2))) {}
  at::Tensor forward(const at::Tensor& x) { return fc->forward(x); }
  torch::nn::Linear fc;
};
TORCH_MODULE(Lin);

// Options of a bare CPU process (world of one) with `accumulation` micro-steps per step.
inline Options World1(int accumulation = 1) {
  Options o;
  o.cpu = true;
  o.gradient_accumulation_steps = accumulation;
  return o;
}

}  // namespace accel::testing

#endif  // ACCEL_TESTS_TESTING_TINY_MODEL_H_
