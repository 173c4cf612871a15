// One rank of the libaccel multi-process tests (tests/mp/worker/accelerator_test.cc spawns it
// with the env contract: RANK, WORLD_SIZE, ACCEL_STORE_ENDPOINT=file://..., or under mpirun).
//
//   worker_mp_rank collectives OUT_DIR
//   worker_mp_rank train OUT_DIR TAG MICRO_BATCH        (accumulation from the env)
//   worker_mp_rank infskip OUT_DIR
//   worker_mp_rank unused OUT_DIR
//   worker_mp_rank resume OUT_DIR MODE CKPT_DIR         (MODE: full | save_and_die | load)
//   worker_mp_rank deadline OUT_DIR MODE                (MODE: exit | freeze)
//
// Every check is made here; a failed one prints "CHECK FAILED: ..." and exits 1. Parameters that
// the driver compares are written by rank 0 as raw float32 to OUT_DIR/params_<TAG>.bin.
#include <signal.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "accel/accelerator.h"
#include "common/env_contract.h"
#include "common/env_reader.h"
#include "common/exit_codes.h"

namespace {

int g_failures = 0;

#define CHECK_TRUE(cond, what)                                                        \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::cerr << "CHECK FAILED (rank " << g_rank << "): " << what << " [" #cond "]" \
                << std::endl;                                                         \
      ++g_failures;                                                                   \
    }                                                                                 \
  } while (0)

int g_rank = -1;

struct NetImpl : torch::nn::Module {
  explicit NetImpl(double dropout = 0.0)
      : fc1(register_module("fc1", torch::nn::Linear(8, 32))),
        fc2(register_module("fc2", torch::nn::Linear(32, 32))),
        fc3(register_module("fc3", torch::nn::Linear(32, 4))),
        unused(register_module("unused", torch::nn::Linear(4, 4))),
        drop(register_module("drop", torch::nn::Dropout(dropout))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::tanh(fc1->forward(x));
    x = drop->forward(torch::tanh(fc2->forward(x)));
    return fc3->forward(x);  // `unused` never takes part: DDP must not wait for it
  }
  torch::nn::Linear fc1, fc2, fc3, unused;
  torch::nn::Dropout drop;
};
TORCH_MODULE(Net);

// A fixed regression dataset, identical in every process.
std::pair<torch::Tensor, torch::Tensor> Dataset(int64_t n) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1234);
  torch::Tensor x = at::randn({n, 8}, gen);
  torch::Tensor w = at::randn({8, 4}, gen);
  torch::Tensor y = torch::sin(x.matmul(w));
  return {x, y};
}

void WriteParams(const std::string& path, Net& net) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (const auto& p : net->parameters()) {
    torch::Tensor c = p.detach().to(torch::kFloat).contiguous();
    out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.nbytes()));
  }
}

accel::Options BaseOptions() {
  accel::Options o = accel::Options::FromEnv();
  o.first_bucket_bytes = 512;  // several buckets, so ordering and overlap are exercised
  o.bucket_bytes = 2048;
  o.collective_timeout = std::chrono::seconds(60);
  o.connect_timeout = std::chrono::seconds(60);
  return o;
}

int Collectives() {
  accel::Accelerator acc(BaseOptions());
  auto& comm = acc.communicator();
  const int w = acc.num_processes();
  const int r = acc.process_index();
  const auto timeout = std::chrono::seconds(60);
  acc.print("backend ", comm.name());
  // Sums of small integers are exact in float32.
  torch::Tensor base = torch::arange(1000, torch::kFloat);
  torch::Tensor f = base + (r + 1);
  comm.AllReduce(f, accel::ReduceOp::kSum, timeout);
  CHECK_TRUE(torch::equal(f, base * w + w * (w + 1) / 2), "float sum");
  torch::Tensor i64 = torch::arange(257, torch::kLong) * (r + 1);
  comm.AllReduce(i64, accel::ReduceOp::kSum, timeout);
  CHECK_TRUE(torch::equal(i64, torch::arange(257, torch::kLong) * (w * (w + 1) / 2)), "int64 sum");
  torch::Tensor mx = torch::arange(10, torch::kInt) + 100 * r;
  comm.AllReduce(mx, accel::ReduceOp::kMax, timeout);
  CHECK_TRUE(torch::equal(mx, torch::arange(10, torch::kInt) + 100 * (w - 1)), "int32 max");
  torch::Tensor avg = torch::full({64}, 2.0 * (r + 1), torch::kDouble);
  comm.AllReduce(avg, accel::ReduceOp::kAvg, timeout);
  CHECK_TRUE(torch::equal(avg, torch::full({64}, static_cast<double>(w + 1), torch::kDouble)),
             "double avg");
  torch::Tensor half = torch::full({33}, r + 1, torch::kHalf);
  comm.AllReduce(half, accel::ReduceOp::kSum, timeout);
  CHECK_TRUE(torch::equal(half, torch::full({33}, w * (w + 1) / 2, torch::kHalf)), "fp16 sum");
  // Half types are reduced in float32 and kAvg divides them too (review finding 1).
  for (auto dtype : {torch::kHalf, torch::kBFloat16}) {
    torch::Tensor avg16 = torch::full({4099}, 2.0 * (r + 1), dtype);
    comm.AllReduce(avg16, accel::ReduceOp::kAvg, timeout);
    CHECK_TRUE(torch::equal(avg16, torch::full({4099}, w + 1, dtype)),
               c10::toString(dtype) << " avg gives " << avg16[0].item<float>());
  }
  // A large buffer: several Gloo segments (1 MiB each).
  torch::Tensor big = torch::full({3 << 20}, static_cast<float>(r));
  comm.AllReduce(big, accel::ReduceOp::kSum, timeout);
  CHECK_TRUE(torch::equal(big, torch::full({3 << 20}, static_cast<float>(w * (w - 1) / 2))),
             "12 MiB sum");
  torch::Tensor b = r == w - 1 ? torch::arange(17, torch::kLong) : torch::zeros({17}, torch::kLong);
  comm.Broadcast(b, w - 1, timeout);
  CHECK_TRUE(torch::equal(b, torch::arange(17, torch::kLong)), "broadcast from last rank");
  torch::Tensor g = comm.AllGather(torch::full({3}, r, torch::kInt), timeout);
  CHECK_TRUE(g.sizes() == torch::IntArrayRef({w, 3}), "all-gather shape");
  for (int k = 0; k < w; ++k)
    CHECK_TRUE(torch::equal(g[k], torch::full({3}, k, torch::kInt)), "all-gather row");
  torch::Tensor cat = acc.gather(torch::full({2}, r, torch::kLong));
  CHECK_TRUE(cat.size(0) == 2 * w && cat[2 * w - 1].item<int64_t>() == w - 1,
             "Accelerator::gather");
  torch::Tensor red = acc.reduce(torch::ones({5}), accel::ReduceOp::kSum);
  CHECK_TRUE(torch::equal(red, torch::full({5}, static_cast<float>(w))), "Accelerator::reduce");
  for (int k = 0; k < 20; ++k) acc.wait_for_everyone();
  return g_failures == 0 ? accel::kExitOk : accel::kExitWorkerFailed;
}

// Trains until 20 optimizer steps; rank 0 writes the parameters. Same global batch (16) for
// every (world, accumulation, micro-batch) with world * accumulation * micro == 16.
int Train(const std::string& out_dir, const std::string& tag, int64_t micro) {
  accel::Accelerator acc(BaseOptions());
  torch::manual_seed(7 + acc.process_index());  // different init per rank: prepare() must broadcast
  acc.print("backend ", acc.communicator().name());
  Net net = acc.prepare(Net());
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  auto [x, y] = Dataset(320);
  auto loader = acc.prepare_loader(x, y, micro, /*shuffle=*/true, /*seed=*/3);
  int64_t epoch = 0;
  while (acc.step_count() < 20) {
    loader.set_epoch(epoch++);
    for (const auto& batch : loader) {
      auto sync = acc.accumulate(net);
      // Autocast is a no-op without ACCELERATE_MIXED_PRECISION (bf16 on CPU with it).
      auto loss =
          acc.autocast([&] { return torch::mse_loss(net->forward(batch.data), batch.target); });
      acc.backward(loss);
      acc.step(opt);
      if (acc.step_count() == 20) break;
    }
  }
  CHECK_TRUE(acc.skipped_steps() == 0, "no skipped steps");
  if (const char* progress = accel::env::Get(accel::env::kProgressFile)) {
    std::ifstream in(progress, std::ios::binary);
    unsigned char bytes[8] = {};
    in.read(reinterpret_cast<char*>(bytes), 8);
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | bytes[i];
    CHECK_TRUE(v == 20, "progress file holds 20, has " << v);
  }
  if (acc.is_main_process()) WriteParams(out_dir + "/params_" + tag + ".bin", net);
  acc.wait_for_everyone();
  return g_failures == 0 ? accel::kExitOk : accel::kExitWorkerFailed;
}

// A model with a layer only rank 0 uses and one no rank uses, trained with AdamW (weight decay):
// the never-used layer keeps no gradient and is left alone, as in a single process (review
// finding 6); the rank-0-only layer gets the average on every rank; replicas stay identical.
struct PartlyUsedNetImpl : torch::nn::Module {
  PartlyUsedNetImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 32))),
        rank0_only(register_module("rank0_only", torch::nn::Linear(32, 32))),
        never(register_module("never", torch::nn::Linear(32, 32))),
        fc2(register_module("fc2", torch::nn::Linear(32, 4))) {}
  torch::Tensor forward(torch::Tensor x, bool extra) {
    x = torch::tanh(fc1->forward(x));
    if (extra) x = x + torch::tanh(rank0_only->forward(x));
    return fc2->forward(x);
  }
  torch::nn::Linear fc1, rank0_only, never, fc2;
};
TORCH_MODULE(PartlyUsedNet);

int Unused() {
  accel::Accelerator acc(BaseOptions());
  torch::manual_seed(5 + acc.process_index());
  PartlyUsedNet net = acc.prepare(PartlyUsedNet());
  const torch::Tensor never_before = net->never->weight.detach().clone();
  torch::optim::AdamW opt(net->parameters(), torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
  auto [x, y] = Dataset(64);
  auto loader = acc.prepare_loader(x, y, 4, true, 2);
  int steps = 0;
  for (const auto& batch : loader) {
    auto sync = acc.accumulate(net);
    acc.backward(torch::mse_loss(net->forward(batch.data, acc.is_main_process()), batch.target));
    if (acc.sync_gradients()) {
      CHECK_TRUE(!net->never->weight.grad().defined(), "unused everywhere: no gradient");
      CHECK_TRUE(net->rank0_only->weight.grad().defined(), "used on rank 0: a gradient");
    }
    acc.step(opt);
    if (++steps == 6) break;
  }
  CHECK_TRUE(torch::equal(net->never->weight, never_before), "unused layer left alone");
  for (const auto& p : net->parameters()) {
    torch::Tensor mine = p.detach().clone();
    CHECK_TRUE(torch::equal(acc.reduce(mine, accel::ReduceOp::kMax), mine), "replicas identical");
  }
  return g_failures == 0 ? accel::kExitOk : accel::kExitWorkerFailed;
}

// Poisons one rank's gradient after the all-reduce: every rank must skip, keep its parameters
// and halve its scale (the overflow flag is all-reduced with MAX).
int InfSkip() {
  accel::Options o = BaseOptions();
  o.loss_scaling = accel::LossScaling::kDynamic;
  o.init_scale = 1024.0;
  accel::Accelerator acc(o);
  Net net = acc.prepare(Net());
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05));
  auto [x, y] = Dataset(64);
  auto loader = acc.prepare_loader(x, y, 4, true, 1);
  int step = 0;
  for (const auto& batch : loader) {
    ++step;
    acc.backward(torch::mse_loss(net->forward(batch.data), batch.target));
    std::vector<torch::Tensor> before;
    for (const auto& p : net->parameters()) before.push_back(p.detach().clone());
    if (step == 4 && acc.process_index() == acc.num_processes() - 1) {
      torch::NoGradGuard no_grad;
      net->fc2->weight.mutable_grad()[0][0] = std::numeric_limits<float>::infinity();
    }
    const bool stepped = acc.step(opt);
    bool same = true;
    auto params = net->parameters();
    for (size_t i = 0; i < params.size(); ++i) same = same && torch::equal(params[i], before[i]);
    if (step == 4) {
      CHECK_TRUE(!stepped, "step 4 skipped");
      CHECK_TRUE(same, "parameters unchanged by the skipped step");
      CHECK_TRUE(acc.loss_scale() == 512.0, "scale halved, is " << acc.loss_scale());
      CHECK_TRUE(acc.skipped_steps() == 1, "one skipped step");
    } else {
      CHECK_TRUE(stepped, "step " << step << " taken");
      CHECK_TRUE(!same, "step " << step << " changed parameters");
      CHECK_TRUE(acc.loss_scale() == (step < 4 ? 1024.0 : 512.0), "scale at step " << step);
    }
    if (step == 6) break;
  }
  // Replicas never diverged.
  for (const auto& p : net->parameters()) {
    torch::Tensor mine = p.detach().clone();
    torch::Tensor mx = acc.reduce(mine, accel::ReduceOp::kMax);
    CHECK_TRUE(torch::equal(mx, mine), "replicas identical after the skip");
  }
  return g_failures == 0 ? accel::kExitOk : accel::kExitWorkerFailed;
}

// full: epochs 0 and 1 (saving after epoch 0). save_and_die: epoch 0, save, SIGKILL itself.
// load: load the checkpoint, epoch 1. full and load must end bit-identical.
int Resume(const std::string& out_dir, const std::string& mode, const std::string& ckpt) {
  accel::Options o = BaseOptions();
  o.loss_scaling = accel::LossScaling::kDynamic;  // scaler state travels too
  o.init_scale = 256.0;
  o.growth_interval = 3;
  accel::Accelerator acc(o);
  torch::manual_seed(11);
  Net net = acc.prepare(Net(/*dropout=*/0.25));  // dropout: the RNG state must be restored
  torch::optim::AdamW opt(net->parameters(), torch::optim::AdamWOptions(1e-2));
  acc.prepare(opt);
  auto [x, y] = Dataset(96);
  auto loader = acc.prepare_loader(x, y, 4, true, 5);
  auto run_epoch = [&](int64_t epoch) {
    loader.set_epoch(epoch);
    for (const auto& batch : loader) {
      auto sync = acc.accumulate(net);
      acc.backward(torch::mse_loss(net->forward(batch.data), batch.target));
      acc.step(opt);
    }
  };
  if (mode == "load") {
    acc.load_state(ckpt);
    CHECK_TRUE(acc.step_count() > 0, "step counter restored");
  } else {
    run_epoch(0);
    acc.save_state(ckpt);
    if (mode == "save_and_die") {
      std::cout << "saved at step " << acc.step_count() << ", dying" << std::endl;
      ::raise(SIGKILL);
    }
  }
  run_epoch(1);
  if (acc.is_main_process()) WriteParams(out_dir + "/params_" + mode + ".bin", net);
  acc.print("resume ", mode, ": ", acc.step_count(), " steps, scale ", acc.loss_scale());
  acc.wait_for_everyone();
  return g_failures == 0 ? accel::kExitOk : accel::kExitWorkerFailed;
}

// The last rank leaves (exit) or stops answering (freeze) after one barrier; rank 0's next
// all-reduce must fail with accel::Error within 2x the 2 s collective deadline.
int Deadline(const std::string& mode) {
  accel::Options o = BaseOptions();
  o.collective_timeout = std::chrono::seconds(2);
  accel::Accelerator acc(o);
  acc.wait_for_everyone();
  if (acc.process_index() == acc.num_processes() - 1) {
    if (mode == "exit") std::_Exit(accel::kExitOk);
    std::this_thread::sleep_for(std::chrono::seconds(7));
    return accel::kExitOk;
  }
  torch::Tensor t = torch::ones({1024});
  const auto start = std::chrono::steady_clock::now();
  try {
    acc.communicator().AllReduce(t, accel::ReduceOp::kSum, o.collective_timeout);
    CHECK_TRUE(false, "all-reduce with a missing peer returned");
  } catch (const accel::Error& e) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    std::cout << "rank " << acc.process_index() << " noticed the " << mode << " after " << ms
              << " ms: " << e.what() << std::endl;
    CHECK_TRUE(ms < 4000, "noticed within 2x the deadline, took " << ms << " ms");
    CHECK_TRUE(std::string(e.what()).find("all-reduce") == 0, "error names the operation");
  }
  // The communicator is aborted: later calls fail at once instead of hanging.
  CHECK_TRUE(
      [&] {
        try {
          acc.wait_for_everyone();
          return false;
        } catch (const accel::Error&) {
          return true;
        }
      }(),
      "calls after the failure throw");
  return g_failures == 0 ? accel::kExitOk : accel::kExitWorkerFailed;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: worker_mp_rank collectives|train|infskip|resume OUT_DIR ...\n";
    return accel::kExitUsage;
  }
  const std::string scenario = argv[1];
  const std::string out_dir = argv[2];
  try {
    g_rank = accel::env::GetInt(accel::env::kRank,
                                accel::env::GetInt("OMPI_COMM_WORLD_RANK", 0).value_or(0))
                 .value_or(0);
    if (scenario == "collectives") return Collectives();
    if (scenario == "train" && argc == 5) return Train(out_dir, argv[3], std::atoll(argv[4]));
    if (scenario == "infskip") return InfSkip();
    if (scenario == "unused") return Unused();
    if (scenario == "deadline" && argc == 4) return Deadline(argv[3]);
    if (scenario == "resume" && argc == 5) return Resume(out_dir, argv[3], argv[4]);
  } catch (const std::exception& e) {
    std::cerr << "rank " << g_rank << " failed: " << e.what() << std::endl;
    return accel::kExitWorkerFailed;
  }
  std::cerr << "worker_mp_rank: bad arguments\n";
  return accel::kExitUsage;
}
