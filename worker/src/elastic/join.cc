// A worker joining a running in-place job (join.h).
#include "worker/src/elastic/join.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>

#include "accel/error.h"
#include "worker/src/elastic/state_transfer.h"

namespace accel::internal {

// The training state a joined process received, until the program has prepared what it holds.
struct JoinedState {
  torch::serialize::InputArchive archive;
  std::int64_t modules = 0;  // how many modules and optimizers the job had
  std::int64_t optimizers = 0;
  std::int64_t modules_loaded = 0;
  std::int64_t optimizers_loaded = 0;
  bool data_pending = true;
  std::int64_t epoch = 0;  // the job's data position
  std::int64_t position = 0;
};

namespace {

std::int64_t ReadInt(torch::serialize::InputArchive& archive, const char* key) {
  at::Tensor t;
  archive.read(key, t);
  return t.item<std::int64_t>();
}

std::string Who(const AcceleratorState& s) { return "rank " + std::to_string(s.rank); }

// Once every module and optimizer holds the job's state: recover() comes back to this RNG state
// (load_state's rule), and the archive is no longer needed.
void MaybeComplete(AcceleratorState& s) {
  JoinedState& j = *s.joined;
  if (j.modules_loaded < j.modules || j.optimizers_loaded < j.optimizers) return;
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  s.rng_at_step = gen.get_state();
}

}  // namespace

std::optional<worker::Generation> JoiningGeneration(const AcceleratorState& s) {
  if (s.options.generation_file.empty()) return std::nullopt;
  std::string error;
  std::optional<worker::Generation> g = worker::ReadGeneration(s.options.generation_file, &error);
  if (!g || !g->joining) return std::nullopt;
  return g;
}

void JoinRunningJob(AcceleratorState& s, worker::Generation g) {
  using JoinClock = std::chrono::steady_clock;
  const auto start = JoinClock::now();
  // As recover() waits: a change while this process starts or joins (a second joiner, a loss)
  // ends its waits, and it joins the newer generation.
  const auto deadline =
      start + (g.recover_timeout_ms > 0 ? std::chrono::milliseconds(g.recover_timeout_ms)
                                        : s.options.connect_timeout);
  std::string bytes;
  Agreement agreed;
  for (;;) {
    AdoptGeneration(s, g, "join");
    try {
      // recover()'s namespace and key prefix for this generation: the ranks that kept their
      // workers connect there.
      ConnectGroup(s, g.store_attempt,
                   "pg" + std::to_string(s.group_id) + "/g" + std::to_string(g.number) + "/",
                   /*regroup=*/true);
      if (NewerGeneration(s)) throw Error("join", Who(s), "a newer generation came");
      agreed = AgreeOnState(s, /*has_state=*/false, &bytes);
      break;
    } catch (const Error& e) {
      std::cerr << "[accel] " << Who(s) << ": joining generation " << g.number << " failed ("
                << e.what() << "); waiting for a newer generation\n";
      std::string error;
      const auto left = std::max(
          std::chrono::milliseconds(0),
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - JoinClock::now()));
      std::optional<worker::Generation> next =
          worker::WaitForGeneration(s.options.generation_file, g.number, left, &error);
      if (!next) {
        throw Error("join", Who(s),
                    std::string(e.what()) + "; no newer generation came (" + error + ")");
      }
      g = *std::move(next);
    }
  }
  auto joined = std::make_shared<JoinedState>();
  std::istringstream in(bytes);
  joined->archive.load_from(in, s.device);
  torch::serialize::InputArchive meta;
  joined->archive.read("meta", meta);
  joined->modules = ReadInt(meta, "modules");
  joined->optimizers = ReadInt(meta, "optimizers");
  ReadMeta(s, meta);  // counters and loss scale; the data position waits for the sampler
  joined->epoch = agreed.epoch;
  joined->position = agreed.position;
  s.joined = std::move(joined);
  if (s.progress) s.progress->Write(static_cast<std::uint64_t>(s.steps));
  if (s.local_rank == 0) {
    const double seconds = std::chrono::duration<double>(JoinClock::now() - start).count();
    std::cerr << "[accel] rank " << s.rank << " joined generation " << g.number << " (world "
              << s.world << ") after step " << s.steps << ": training state (" << bytes.size()
              << " bytes) from rank " << agreed.source << " in " << seconds << " s\n";
  }
}

bool Joined(const AcceleratorState& s) { return s.joined != nullptr; }

bool LoadJoinedModule(AcceleratorState& s, torch::nn::Module& module) {
  if (!s.joined) return false;
  JoinedState& j = *s.joined;
  const auto index = static_cast<std::int64_t>(s.modules.size());
  if (index >= j.modules) {
    throw Error("prepare", "module " + module.name(),
                "this process joined a running job whose state has " + std::to_string(j.modules) +
                    " prepared modules; this is module " + std::to_string(index + 1) +
                    " (prepare the same modules in the same order on every rank)");
  }
  torch::serialize::InputArchive archive;
  j.archive.read("model_" + std::to_string(index), archive);
  module.load(archive);
  ++j.modules_loaded;
  MaybeComplete(s);
  return true;
}

void LoadJoinedOptimizer(AcceleratorState& s, torch::optim::Optimizer& optimizer) {
  if (!s.joined) return;
  JoinedState& j = *s.joined;
  const auto index = static_cast<std::int64_t>(s.optimizers.size());
  if (index >= j.optimizers) {
    throw Error("prepare", "optimizer",
                "this process joined a running job whose state has " +
                    std::to_string(j.optimizers) + " optimizers; this is optimizer " +
                    std::to_string(index + 1) +
                    " (prepare the same optimizers in the same order on every rank)");
  }
  torch::serialize::InputArchive archive;
  j.archive.read("optimizer_" + std::to_string(index), archive);
  optimizer.state().clear();
  optimizer.load(archive);
  ++j.optimizers_loaded;
  MaybeComplete(s);
}

void ResumeJoinedData(AcceleratorState& s) {
  if (!s.joined || !s.joined->data_pending) return;
  s.joined->data_pending = false;
  ResumeData(s, s.joined->epoch, s.joined->position);
}

void FinishJoin(AcceleratorState& s) {
  if (!s.joined) return;
  const JoinedState& j = *s.joined;
  if (j.modules_loaded < j.modules || j.optimizers_loaded < j.optimizers) {
    throw Error("step", Who(s),
                "this process joined a running job whose state has " + std::to_string(j.modules) +
                    " prepared modules and " + std::to_string(j.optimizers) +
                    " optimizers, but it prepared " + std::to_string(j.modules_loaded) + " and " +
                    std::to_string(j.optimizers_loaded) + " before its first step");
  }
  s.joined.reset();
}

}  // namespace accel::internal
