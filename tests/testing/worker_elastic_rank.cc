// One rank of the in-place recovery test (tests/mp/worker/recovery_test.cc), started with the
// env contract by tests/testing/mp_ranks.h:
//
//   worker_elastic_rank OUT_DIR TAG MODE STEP CKPT_DIR DIE_RANKS
//
// MODE full: train kEpochs epochs in an elastic loop (catch accel::Error, Accelerator::recover());
//   with the generation file OUT_DIR/gen_m<GROUP_RANK>; the ranks in DIE_RANKS ("4,5" or "-")
//   write OUT_DIR/dead_<rank> and SIGKILL themselves in the sync micro-step after STEP completed
//   steps, after its forward (their peers are then in, or about to enter, its all-reduce).
// MODE grow: as full, but the ranks that start in generation 0 wait after STEP completed steps
//   until the generation file holds a newer generation (the test adds a machine: its ranks start
//   with a file that says `joining`); every rank writes its parameters, as it holds them when
//   it first trains in the new generation, to OUT_DIR/joined_<rank at start>.bin.
// MODE save: train to STEP steps, save_state(CKPT_DIR), exit.
// MODE load: load_state(CKPT_DIR) (saved at another world size), train to the end.
// Every rank appends "epoch step index..." per completed step to OUT_DIR/record_<TAG>_<rank at
// start>.txt; rank 0 writes its parameters to OUT_DIR/params_<TAG>.bin at the end; each rank
// prints "start pid P rank R world W", "recovered step S at unix ms T" (the first step completed
// after recover()) and "end pid P rank R world W steps S generation G".
#include <signal.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "accel/accelerator.h"
#include "common/env_contract.h"
#include "common/env_reader.h"
#include "common/exit_codes.h"

namespace {

constexpr int kEpochs = 2;
constexpr std::int64_t kSamples = 240;
constexpr std::int64_t kBatch = 4;

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 32))),
        fc2(register_module("fc2", torch::nn::Linear(32, 4))),
        drop(register_module("drop", torch::nn::Dropout(0.25))) {}
  torch::Tensor forward(torch::Tensor x) {
    return fc2->forward(drop->forward(torch::tanh(fc1->forward(x))));  // dropout: the RNG counts
  }
  torch::nn::Linear fc1, fc2;
  torch::nn::Dropout drop;
};
TORCH_MODULE(Net);

// MODE grow: says it waits (OUT_DIR/waiting_<rank>), then polls `path` until it holds a
// generation above 0; the next collective then fails (the watch aborted the group) into recover().
void WaitForNewerGeneration(const std::string& path, const std::string& out_dir, int rank) {
  std::ofstream(out_dir + "/waiting_" + std::to_string(rank)) << ::getpid();
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < end) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("generation=", 0) == 0 && std::stoll(line.substr(11)) > 0) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::vector<int> ParseRanks(const std::string& text) {
  std::vector<int> out;
  if (text == "-") return out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoi(item));
  return out;
}

int Run(const std::string& out_dir, const std::string& tag, const std::string& mode,
        std::int64_t step, const std::string& ckpt, const std::vector<int>& die) {
  accel::Options o = accel::Options::FromEnv();
  o.first_bucket_bytes = 256;  // a few buckets, so the all-reduce in flight is one of several
  o.bucket_bytes = 1024;
  // A survivor's Gloo send to a peer that already regrouped is not woken by the abort (Gloo's
  // closeConnections leaves a send waiting for the peer's receive): it ends at this deadline,
  // well inside the peers' connect deadline below (docs/design/in-place-recovery.md).
  o.collective_timeout = std::chrono::seconds(10);
  o.connect_timeout = std::chrono::seconds(60);
  o.loss_scaling = accel::LossScaling::kDynamic;  // the scaler's state must survive too
  o.init_scale = 256.0;
  o.growth_interval = 3;
  if (mode == "full" || mode == "grow") {
    o.generation_file = out_dir + "/gen_m" +
                        std::to_string(accel::env::GetInt(accel::env::kGroupRank, 0).value_or(0));
  }
  accel::Accelerator acc(o);
  torch::manual_seed(11);
  Net net = acc.prepare(Net());
  torch::optim::AdamW opt(net->parameters(), torch::optim::AdamWOptions(1e-2));
  acc.prepare(opt);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1234);
  torch::Tensor x = at::randn({kSamples, 8}, gen);
  torch::Tensor y = torch::sin(x.matmul(at::randn({8, 4}, gen)));
  auto loader = acc.prepare_loader(x, y, kBatch, /*shuffle=*/true, /*seed=*/5);
  if (mode == "load") acc.load_state(ckpt);

  const int first_rank = acc.process_index();
  auto write_params = [&](const std::string& path) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    for (const auto& p : net->parameters()) {
      torch::Tensor c = p.detach().to(torch::kFloat).contiguous();
      out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.nbytes()));
    }
  };
  const std::string joined_path = out_dir + "/joined_" + std::to_string(first_rank) + ".bin";
  if (mode == "grow" && acc.generation() > 0) write_params(joined_path);  // a joiner
  const bool dies = std::find(die.begin(), die.end(), first_rank) != die.end();
  std::cout << "start pid " << ::getpid() << " rank " << first_rank << " world "
            << acc.num_processes() << std::endl;
  std::ofstream record(out_dir + "/record_" + tag + "_" + std::to_string(first_rank) + ".txt",
                       std::ios::app);
  std::vector<std::int64_t> window;                         // the samples of the step in flight
  bool recovered = mode == "grow" && acc.generation() > 0;  // a joiner: its first step
  for (;;) {
    try {
      for (std::int64_t epoch = loader.sampler().epoch(); epoch < kEpochs; ++epoch) {
        loader.set_epoch(epoch);
        for (const auto& batch : loader) {
          auto sync = acc.accumulate(net);
          const auto& idx = loader.last_indices();
          window.insert(window.end(), idx.begin(), idx.end());
          torch::Tensor loss = torch::mse_loss(net->forward(batch.data), batch.target);
          if (dies && sync.sync_gradients() && acc.step_count() == step) {
            std::ofstream(out_dir + "/dead_" + std::to_string(first_rank)) << ::getpid();
            ::raise(SIGKILL);
          }
          acc.backward(loss);
          acc.step(opt);
          if (!sync.sync_gradients()) continue;
          record << epoch << " " << acc.step_count();
          for (std::int64_t i : window) record << " " << i;
          record << std::endl;
          window.clear();
          if (recovered) {  // the first step completed at the new world
            recovered = false;
            std::cout << "recovered step " << acc.step_count() << " at unix ms "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count()
                      << std::endl;
          }
          if (mode == "grow" && acc.generation() == 0 && acc.step_count() == step) {
            WaitForNewerGeneration(o.generation_file, out_dir, first_rank);
          }
          if (mode == "save" && acc.step_count() == step) {
            acc.save_state(ckpt);
            std::cout << "saved at step " << step << std::endl;
            return accel::kExitOk;
          }
        }
      }
      break;
    } catch (const accel::Error& e) {
      std::cout << "rank " << acc.process_index() << " at step " << acc.step_count()
                << " caught: " << e.what() << std::endl;
      window.clear();
      if (!acc.recover()) throw;
      recovered = true;
      if (mode == "grow") write_params(joined_path);
    }
  }
  if (acc.is_main_process()) write_params(out_dir + "/params_" + tag + ".bin");
  acc.wait_for_everyone();
  std::cout << "end pid " << ::getpid() << " rank " << acc.process_index() << " world "
            << acc.num_processes() << " steps " << acc.step_count() << " generation "
            << acc.generation() << std::endl;
  return accel::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::cerr
        << "usage: worker_elastic_rank OUT_DIR TAG full|grow|save|load STEP CKPT_DIR DIE_RANKS\n";
    return accel::kExitUsage;
  }
  try {
    return Run(argv[1], argv[2], argv[3], std::atoll(argv[4]), argv[5], ParseRanks(argv[6]));
  } catch (const std::exception& e) {
    std::cerr << "failed: " << e.what() << std::endl;
    return accel::kExitWorkerFailed;
  }
}
