// Accelerator::recover(): in-place recovery after a membership change (docs/libaccel.md
// "In-place recovery"): drop the step in flight, connect the new world, agree on the newest
// completed step, re-split the epoch's remaining samples.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "accel/accelerator.h"
#include "accel/error.h"
#include "common/env_contract.h"
#include "worker/src/accelerator_state.h"
#include "worker/src/elastic/generation.h"

namespace accel {
namespace {

using Clock = std::chrono::steady_clock;

// The whole replicated training state (modules, optimizers, counters, scale, data position),
// serialized as a checkpoint holds it.
std::string SerializeTrainingState(internal::AcceleratorState& s) {
  torch::serialize::OutputArchive all;
  for (std::size_t i = 0; i < s.modules.size(); ++i) {
    torch::serialize::OutputArchive archive;
    s.modules[i]->save(archive);
    all.write("model_" + std::to_string(i), archive);
  }
  for (std::size_t i = 0; i < s.optimizers.size(); ++i) {
    torch::serialize::OutputArchive archive;
    s.optimizers[i]->save(archive);
    all.write("optimizer_" + std::to_string(i), archive);
  }
  torch::serialize::OutputArchive meta;
  internal::WriteMeta(s, meta);
  all.write("meta", meta);
  std::ostringstream out;
  all.save_to(out);
  return out.str();
}

void LoadTrainingState(internal::AcceleratorState& s, const std::string& bytes) {
  std::istringstream in(bytes);
  torch::serialize::InputArchive all;
  all.load_from(in, s.device);
  for (std::size_t i = 0; i < s.modules.size(); ++i) {
    torch::serialize::InputArchive archive;
    all.read("model_" + std::to_string(i), archive);
    s.modules[i]->load(archive);
  }
  for (std::size_t i = 0; i < s.optimizers.size(); ++i) {
    torch::serialize::InputArchive archive;
    all.read("optimizer_" + std::to_string(i), archive);
    s.optimizers[i]->state().clear();
    s.optimizers[i]->load(archive);
  }
  torch::serialize::InputArchive meta;
  all.read("meta", meta);
  internal::ReadMeta(s, meta);
}

// Broadcasts `bytes` from `root` (every rank returns root's bytes).
std::string BroadcastBytes(internal::AcceleratorState& s, std::string bytes, int root) {
  at::Tensor size = at::full({1}, static_cast<std::int64_t>(bytes.size()), at::kLong).to(s.device);
  s.comm->Broadcast(size, root, s.options.collective_timeout);
  const std::int64_t n = size.cpu().item<std::int64_t>();
  at::Tensor data = at::empty({n}, at::kByte);
  if (s.rank == root) std::memcpy(data.data_ptr(), bytes.data(), static_cast<std::size_t>(n));
  data = data.to(s.device);
  s.comm->Broadcast(data, root, s.options.collective_timeout);
  data = data.cpu();
  return std::string(static_cast<const char*>(data.data_ptr()), static_cast<std::size_t>(n));
}

void SetEnv(const char* name, std::int64_t value) {
  ::setenv(name, std::to_string(value).c_str(), 1);
}

// Forgets the micro-steps of the step in flight: gradients, accumulation position, what the
// loss-scaling iteration unscaled, the samples fetched; the CPU RNG goes back to the state of
// the last completed step.
void DropWindow(internal::AcceleratorState& s) {
  for (auto& p : internal::PreparedParameters(s)) p.mutable_grad().reset();
  s.FinishScalerIteration();  // a completed step's scale update is due, whatever came after
  s.unscaled.clear();
  s.unscale_found.clear();
  s.unsynced = false;
  s.micro_step = 0;
  s.sync = true;
  s.end_of_data = false;
  s.window_samples = 0;
  if (s.rng_at_step.defined()) {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(s.rng_at_step);
  }
}

// The watch's callback: a step waiting on a peer that is gone fails now (unless recover() read
// that generation first and uses it already).
void AbortForGeneration(internal::AcceleratorState& s, std::int64_t number) {
  std::lock_guard<std::mutex> lock(s.comm_mu);
  if (number > s.generation && s.comm) s.comm->Abort();
}

}  // namespace

namespace internal {

void StartGenerationWatch(AcceleratorState& s) {
  if (s.options.generation_file.empty()) return;
  std::string error;
  if (auto g = worker::ReadGeneration(s.options.generation_file, &error)) s.generation = g->number;
  s.watch = std::make_unique<worker::GenerationWatch>(
      s.options.generation_file, s.generation,
      [&s](std::int64_t number) { AbortForGeneration(s, number); });
}

}  // namespace internal

std::int64_t Accelerator::generation() const { return state_->generation; }

bool Accelerator::recover() {
  auto& s = *state_;
  if (s.options.generation_file.empty()) return false;
  const auto start = Clock::now();
  const std::string who = "rank " + std::to_string(s.rank);
  std::string error;
  const auto g = worker::WaitForGeneration(s.options.generation_file, s.generation,
                                           s.options.connect_timeout, &error);
  if (!g) {
    throw Error("recover", who,
                "no generation after " + std::to_string(s.generation) + " within " +
                    std::to_string(s.options.connect_timeout.count()) + " ms (" + error + ")");
  }
  if (s.local_rank >= g->local_world) {
    throw Error("recover", who,
                "local rank " + std::to_string(s.local_rank) + " is not in generation " +
                    std::to_string(g->number) + " (" + std::to_string(g->local_world) +
                    " local ranks)");
  }
  // The old group: aborted first, so that DDP's communication thread returns, then DDP (its
  // hooks and buckets), then the group itself.
  const int old_world = s.world;
  {
    std::lock_guard<std::mutex> lock(s.comm_mu);
    s.generation = g->number;  // the watch no longer aborts for it
    if (s.comm) s.comm->Abort();
  }
  if (s.watch) s.watch->set_known(g->number);
  s.grad_sync.reset();
  {
    std::lock_guard<std::mutex> lock(s.comm_mu);
    s.comm.reset();
    s.ddp_comm = nullptr;
    s.kv.reset();
  }
  DropWindow(s);
  const auto [epoch, position] = internal::DataPosition(s);

  // The new world.
  s.world = g->world;
  s.rank = g->base_rank + s.local_rank;
  s.options.world_size = s.world;
  s.options.rank = s.rank;
  s.options.local_world_size = g->local_world;
  SetEnv(env::kRank, s.rank);
  SetEnv(env::kWorldSize, s.world);
  SetEnv(env::kLocalWorldSize, g->local_world);
  SetEnv(env::kGroupRank, g->group_rank);
  SetEnv(env::kGroupWorldSize, g->group_world);
  if (g->master_port > 0) SetEnv(env::kMasterPort, g->master_port);
  internal::ConnectGroup(
      s, g->store_attempt,
      "pg" + std::to_string(s.group_id) + "/g" + std::to_string(s.generation) + "/");

  // Agree on the newest completed step: ranks may stand one apart when a collective completed
  // on some before the peer died. The lowest rank holding it sends its state to all.
  at::Tensor mine = at::tensor(std::vector<std::int64_t>{s.steps, epoch, position}, at::kLong);
  at::Tensor all = s.comm->AllGather(mine.to(s.device), s.options.collective_timeout).cpu();
  int source = 0;
  bool same = true;
  for (int r = 0; r < s.world; ++r) {
    if (!at::equal(all[r], all[0])) same = false;
    if (all[r][0].item<std::int64_t>() > all[source][0].item<std::int64_t>()) source = r;
  }
  if (!same) {
    std::string bytes = s.rank == source ? SerializeTrainingState(s) : std::string();
    bytes = BroadcastBytes(s, std::move(bytes), source);
    if (s.rank != source) LoadTrainingState(s, bytes);
  }
  const auto [agreed_epoch, agreed_position] = internal::DataPosition(s);
  internal::ResumeData(s, same ? epoch : agreed_epoch, same ? position : agreed_position);

  if (s.world > 1) {
    internal::PrepareDdp(s);
    if (s.grad_sync) s.grad_sync->ResetGrads();
  }
  if (s.progress) s.progress->Write(static_cast<std::uint64_t>(s.steps));
  if (s.rank == 0) {
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    std::cerr << "[accel] generation " << s.generation << ": world " << old_world << " -> "
              << s.world << ", continuing after step " << s.steps << " (epoch "
              << (same ? epoch : agreed_epoch) << ", sample position "
              << (same ? position : agreed_position) << ")"
              << (same ? "" : ", state sent by rank " + std::to_string(source)) << " in " << seconds
              << " s\n";
  }
  return true;
}

}  // namespace accel
