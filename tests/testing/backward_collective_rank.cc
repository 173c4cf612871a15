// One rank of tests/mp/worker/backward_collective_test.cc (issue 23, the suspected "collective
// issued inside backward"): a SyncBatchNorm-style backward function all-reduces a small tensor
// through the Accelerator while DDP buckets all-reduce on the communication thread.
//
//   backward_collective_rank ITERATIONS
//
// The model is fc1 -> tanh -> fc2 -> ReduceInBackward -> tanh -> fc3 with buckets of ~1 KB, so
// autograd launches fc3's bucket (handed to the communication thread) just before it runs
// ReduceInBackward's backward, and fc2's and fc1's after it. On each iteration one rank
// (alternating) reaches the collective 20 ms late, so its communication thread has surely issued
// fc3's bucket first, while the other rank's autograd thread may win the communicator. Every rank
// must issue the collectives in one order: the reduced value must be the sum over the ranks and
// the replicas identical. Prints "CHECK FAILED: ..." and exits 1 on any difference.
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "accel/accelerator.h"
#include "accel/error_file.h"

namespace {

accel::Accelerator* g_acc = nullptr;
int g_iteration = 0;
int g_failures = 0;

// Identity forward; backward all-reduces three numbers (a size no bucket has), as SyncBatchNorm's
// backward all-reduces its gradient statistics, and checks their sum.
struct ReduceInBackward : torch::autograd::Function<ReduceInBackward> {
  static torch::Tensor forward(torch::autograd::AutogradContext* /*ctx*/, torch::Tensor x) {
    return x.clone();
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* /*ctx*/,
                                                 torch::autograd::variable_list grads) {
    accel::Accelerator& acc = *g_acc;
    if (acc.process_index() == g_iteration % acc.num_processes()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const torch::Tensor total = acc.reduce(torch::full({3}, acc.process_index() + 1.0f));
    const int world = acc.num_processes();
    const float want = static_cast<float>(world * (world + 1) / 2);
    if (!total.equal(torch::full({3}, want))) {
      std::cerr << "CHECK FAILED (rank " << acc.process_index() << ", iteration " << g_iteration
                << "): reduce inside backward gave " << total << " instead of " << want << "\n";
      ++g_failures;
    }
    return {grads[0]};
  }
};

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 64))),
        fc2(register_module("fc2", torch::nn::Linear(64, 64))),
        fc3(register_module("fc3", torch::nn::Linear(64, 4))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = fc2->forward(torch::tanh(fc1->forward(x)));
    return fc3->forward(torch::tanh(ReduceInBackward::apply(x)));
  }
  torch::nn::Linear fc1, fc2, fc3;
};
TORCH_MODULE(Net);

int Main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 30;
  accel::Options options = accel::Options::FromEnv();
  options.first_bucket_bytes = 1000;  // fc3 (1,040 bytes), then fc2, then fc1 (the final one)
  options.bucket_bytes = 1000;
  options.overlap = accel::Overlap::kOn;
  accel::Accelerator acc(options);
  g_acc = &acc;
  torch::manual_seed(1);
  Net model = acc.prepare(Net());
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05));
  acc.prepare(opt);
  torch::manual_seed(100 + acc.process_index());  // every rank its own data
  for (g_iteration = 0; g_iteration < iterations; ++g_iteration) {
    const torch::Tensor x = torch::randn({16, 8});
    const torch::Tensor y = torch::randn({16, 4});
    opt.zero_grad();
    acc.backward(torch::mse_loss(model->forward(x), y));
    acc.step(opt);
  }
  std::vector<torch::Tensor> flat;
  for (const auto& p : model->parameters()) flat.push_back(p.detach().flatten());
  const torch::Tensor mine = torch::cat(flat);
  const torch::Tensor all = acc.gather(mine.unsqueeze(0));
  for (int r = 1; r < acc.num_processes(); ++r) {
    if (!all[r].equal(all[0])) {
      std::cerr << "CHECK FAILED (rank " << acc.process_index() << "): replica " << r
                << " differs from replica 0\n";
      ++g_failures;
    }
  }
  if (g_failures > 0) return 1;
  std::cout << "backward collectives: " << iterations << " iterations ok\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return accel::RunWorker([&] { return Main(argc, argv); });
}
