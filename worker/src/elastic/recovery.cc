// Accelerator::recover(): in-place recovery after a membership change (docs/libaccel.md
// "In-place recovery"): drop the step in flight, connect the new world, agree on the newest
// completed step, re-split the epoch's remaining samples.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>

#include "accel/accelerator.h"
#include "accel/error.h"
#include "common/env_contract.h"
#include "worker/src/accelerator_state.h"
#include "worker/src/elastic/generation.h"
#include "worker/src/elastic/state_transfer.h"

namespace accel {
namespace {

using Clock = std::chrono::steady_clock;

void SetEnv(const char* name, std::int64_t value) {
  ::setenv(name, std::to_string(value).c_str(), 1);
}

// Forgets the micro-steps of the step in flight: gradients, accumulation position, what the
// loss-scaling iteration unscaled, the samples fetched; the CPU RNG goes back to the state of
// the last completed step.
void DropWindow(internal::AcceleratorState& s) {
  ++s.state_version;  // compiled steps capture again in the new world
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
  if (s.generation == 0) {  // a joiner (elastic/join.cc) knows its generation already
    if (auto g = worker::ReadGeneration(s.options.generation_file, &error))
      s.generation = g->number;
  }
  s.watch = std::make_unique<worker::GenerationWatch>(
      s.options.generation_file, s.generation,
      [&s](std::int64_t number) { AbortForGeneration(s, number); });
}

std::optional<worker::Generation> NewerGeneration(const AcceleratorState& s) {
  if (s.options.generation_file.empty()) return std::nullopt;
  std::string error;
  std::optional<worker::Generation> g = worker::ReadGeneration(s.options.generation_file, &error);
  if (!g || g->number <= s.generation) return std::nullopt;
  return g;
}

std::function<std::string()> NewerGenerationCheck(const AcceleratorState& s) {
  return [path = s.options.generation_file, known = s.generation]() -> std::string {
    std::string error;
    const auto g = worker::ReadGeneration(path, &error);
    if (!g || g->number <= known) return "";
    return "generation " + std::to_string(g->number) + " replaced generation " +
           std::to_string(known) + " during its connect";
  };
}

void AdoptGeneration(AcceleratorState& s, const worker::Generation& g, const std::string& op) {
  if (s.local_rank >= g.local_world) {
    throw Error(op, "rank " + std::to_string(s.rank),
                "local rank " + std::to_string(s.local_rank) + " is not in generation " +
                    std::to_string(g.number) + " (" + std::to_string(g.local_world) +
                    " local ranks)");
  }
  // The old group: aborted first, so that DDP's communication thread returns, then DDP (its
  // hooks and buckets), then the group itself.
  {
    std::lock_guard<std::mutex> lock(s.comm_mu);
    s.generation = g.number;  // the watch no longer aborts for it
    if (s.comm) s.comm->Abort();
  }
  if (s.watch) s.watch->set_known(g.number);
  s.grad_sync.reset();
  {
    std::lock_guard<std::mutex> lock(s.comm_mu);
    s.comm.reset();
    s.ddp_comm = nullptr;
    s.kv.reset();
  }
  s.world = g.world;
  s.rank = g.base_rank + s.local_rank;
  s.options.world_size = s.world;
  s.options.rank = s.rank;
  s.options.local_world_size = g.local_world;
  SetEnv(env::kRank, s.rank);
  SetEnv(env::kWorldSize, s.world);
  SetEnv(env::kLocalWorldSize, g.local_world);
  SetEnv(env::kGroupRank, g.group_rank);
  SetEnv(env::kGroupWorldSize, g.group_world);
  if (g.master_port > 0) SetEnv(env::kMasterPort, g.master_port);
}

}  // namespace internal

std::int64_t Accelerator::generation() const { return state_->generation; }

bool Accelerator::recover() {
  auto& s = *state_;
  if (s.options.generation_file.empty()) return false;
  const auto start = Clock::now();
  const int old_world = s.world;
  std::string error;
  // As long as the rendezvous waits for a replacement (the launcher's rdzv_timeout and a margin,
  // in the file); the connect deadline when the file does not say.
  std::chrono::milliseconds wait = s.options.connect_timeout;
  if (const auto now = worker::ReadGeneration(s.options.generation_file, &error);
      now && now->recover_timeout_ms > 0) {
    wait = std::chrono::milliseconds(now->recover_timeout_ms);
  }
  const auto deadline = start + wait;
  internal::Agreement agreed;
  std::string failed;  // why the last regroup failed
  // A regroup that fails (a second loss or join while it connects or agrees: its peers will
  // never all arrive; a newer generation ends its waits at once) starts again at the next
  // generation; each round needs a newer one, and all of them together wait at most `wait`.
  for (int round = 0;; ++round) {
    const std::string who = "rank " + std::to_string(s.rank);
    error.clear();
    const auto left =
        std::max(std::chrono::milliseconds(0),
                 std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
    const auto g = worker::WaitForGeneration(s.options.generation_file, s.generation, left, &error);
    if (!g) {
      throw Error("recover", who,
                  "no generation after " + std::to_string(s.generation) + " within " +
                      std::to_string(wait.count()) +
                      " ms (the rendezvous's rdzv_timeout and a margin; " + error + ")" +
                      (failed.empty() ? "" : "; its regroup failed: " + failed));
    }
    internal::AdoptGeneration(s, *g, "recover");
    if (round == 0) DropWindow(s);
    try {
      internal::ConnectGroup(
          s, g->store_attempt,
          "pg" + std::to_string(s.group_id) + "/g" + std::to_string(s.generation) + "/",
          /*regroup=*/true);
      // A change noticed after the connect's last wait and before s.comm was set aborted nothing.
      if (internal::NewerGeneration(s)) throw Error("recover", who, "a newer generation came");
      // Agree on the newest completed step; ranks that lack it (a step behind, or joining) get
      // it.
      s.joined.reset();  // a joiner regrouping again holds the state it was sent
      agreed = internal::AgreeOnState(s, /*has_state=*/true, nullptr);
    } catch (const Error& e) {
      // Its peers will not all come (a newer generation, or one that a machine's loss is about
      // to bring): the regroup waits for it as a failed step does.
      failed = e.what();
      std::cerr << "[accel] " << who << ": the regroup at generation " << s.generation
                << " failed (" << failed << "); waiting for a newer generation\n";
      continue;
    }
    break;
  }
  internal::ResumeData(s, agreed.epoch, agreed.position);

  if (s.world > 1) {
    internal::PrepareDdp(s);
    if (s.grad_sync) s.grad_sync->ResetGrads();
  }
  if (s.progress) s.progress->Write(static_cast<std::uint64_t>(s.steps));
  if (s.rank == 0) {
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    std::string sent;
    if (!agreed.same) {
      sent = ", state sent by rank " + std::to_string(agreed.source);
      if (agreed.joiners > 0) sent += " (" + std::to_string(agreed.joiners) + " ranks joined)";
    }
    std::cerr << "[accel] generation " << s.generation << ": world " << old_world << " -> "
              << s.world << ", continuing after step " << s.steps << " (epoch " << agreed.epoch
              << ", sample position " << agreed.position << ")" << sent << " in " << seconds
              << " s\n";
  }
  return true;
}

}  // namespace accel
