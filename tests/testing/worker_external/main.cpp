// A user's training program outside the accel-launch tree: only installed headers.
#include <accel/accelerator.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <iostream>

struct NetImpl : torch::nn::Module {
  NetImpl() : fc(register_module("fc", torch::nn::Linear(4, 1))) {}
  at::Tensor forward(const at::Tensor& x) { return fc->forward(x); }
  torch::nn::Linear fc;
};
TORCH_MODULE(Net);

int main() {
  accel::Accelerator acc;  // a bare process: world of 1
  Net net = acc.prepare(Net());
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1));
  at::Tensor x = at::randn({64, 4});
  at::Tensor y = x.sum(1, /*keepdim=*/true);
  auto loader = acc.prepare_loader(x, y, 16);
  double first = -1, last = 0;
  for (int epoch = 0; epoch < 30; ++epoch) {
    loader.set_epoch(epoch);
    for (const auto& batch : loader) {
      auto sync = acc.accumulate(net);
      at::Tensor loss = (net->forward(batch.data) - batch.target).pow(2).mean();
      acc.backward(loss);
      acc.step(opt);
      if (first < 0) first = loss.item<double>();
      last = loss.item<double>();
    }
  }
  acc.print("external: ", acc.num_processes(), " process, loss ", first, " -> ", last);
  return last < 0.1 * first ? 0 : 1;
}
