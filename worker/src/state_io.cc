// Accelerator::save_state / load_state / has_state.
//
// Layout of a checkpoint directory:
//   model_<i>.pt       prepared module i
//   optimizer_<i>.pt   registered optimizer i
//   accelerator.pt     step counters, accumulation position, loss scale and growth tracker, world,
//                      the data position (epoch, first position no completed step trained on)
//   rng_<rank>.pt      each rank's CPU (and CUDA) generator state
// The model, optimizer and accelerator files are shared: one writer per distinct directory
// writes them (every machine's own directory, or once for a directory all machines share);
// every rank writes its own rng file. The save goes into "<dir>.tmp"; after a barrier each
// writer promotes it to "<dir>" (the previous one becomes "<dir>.old"), and after another
// barrier "<dir>.old" goes: a crash at any point leaves a complete checkpoint in "<dir>" or
// "<dir>.old" on every machine (worker/src/checkpoint_dir.h). load_state takes the newest
// checkpoint that every rank has.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "accel/accelerator.h"
#include "accel/error.h"
#include "worker/src/accelerator_state.h"
#include "worker/src/checkpoint_dir.h"
#include "worker/src/elastic/join.h"

namespace accel {
namespace {

namespace fs = std::filesystem;

at::Tensor Scalar64(std::int64_t v) {
  return at::full({1}, v, at::TensorOptions().dtype(at::kLong));
}
at::Tensor ScalarF64(double v) { return at::full({1}, v, at::TensorOptions().dtype(at::kDouble)); }

at::Tensor GeneratorState(at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void SetGeneratorState(at::Generator gen, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

template <typename Fn>
void Guard(const char* op, const fs::path& path, Fn&& fn) {
  try {
    fn();
  } catch (const accel::Error&) {
    throw;
  } catch (const c10::Error& e) {
    throw Error(op, path.string(), e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw Error(op, path.string(), e.what());
  }
}

// Returns `values` reduced with `op` over every rank (int64, on the communicator's device).
std::vector<std::int64_t> AllReduceInts(internal::AcceleratorState& s,
                                        std::vector<std::int64_t> values, ReduceOp op) {
  at::Tensor t = at::tensor(values, at::TensorOptions().dtype(at::kLong)).to(s.device);
  s.comm->AllReduce(t, op, s.options.collective_timeout);
  t = t.cpu();
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = t[static_cast<long>(i)].item<std::int64_t>();
  return values;
}

// Returns the step count a checkpoint directory holds.
std::int64_t SavedSteps(const fs::path& dir) {
  torch::serialize::InputArchive meta;
  meta.load_from((dir / worker::kCheckpointMeta).string());
  at::Tensor steps;
  meta.read("steps", steps);
  return steps.item<std::int64_t>();
}

// The checkpoints under `dir` this rank could load, with their step counts, newest first.
std::vector<std::pair<fs::path, std::int64_t>> LocalCheckpoints(const std::string& dir) {
  std::vector<std::pair<fs::path, std::int64_t>> found;
  for (const fs::path& candidate : worker::CheckpointCandidates(worker::CheckpointPaths(dir))) {
    try {
      found.emplace_back(candidate, SavedSteps(candidate));
    } catch (const std::exception&) {
      // An unreadable meta file: not a checkpoint this rank can resume from.
    }
  }
  return found;
}

// Returns the checkpoint every rank agrees on: the newest step that every rank has under `dir`
// (a crash between two machines' promotions leaves one a save ahead). Collective. Empty when
// some rank has none; throws when the ranks have checkpoints but no common one.
std::optional<fs::path> AgreedCheckpoint(internal::AcceleratorState& s, const std::string& dir) {
  const auto local = LocalCheckpoints(dir);
  std::int64_t newest = -1;
  for (const auto& [path, steps] : local) newest = std::max(newest, steps);
  const std::int64_t target = AllReduceInts(s, {newest}, ReduceOp::kMin)[0];
  if (target < 0) return std::nullopt;
  std::optional<fs::path> chosen;
  for (const auto& [path, steps] : local) {
    if (steps == target && !chosen) chosen = path;
  }
  if (AllReduceInts(s, {chosen ? 1 : 0}, ReduceOp::kMin)[0] == 0) {
    throw Error("load state", dir,
                "the ranks hold no common checkpoint (rank " + std::to_string(s.rank) +
                    (chosen ? " has" : " lacks") + " step " + std::to_string(target) + ")");
  }
  return chosen;
}

// Writes this rank's share of the checkpoint into `tmp`: its rng file, and the shared files
// when it is its directory's writer.
void WriteFiles(internal::AcceleratorState& s, const fs::path& tmp, bool writer) {
  torch::serialize::OutputArchive rng;
  rng.write("cpu", GeneratorState(at::detail::getDefaultCPUGenerator()));
  if (s.device.is_cuda())
    rng.write("cuda", GeneratorState(at::globalContext().defaultGenerator(s.device)));
  const fs::path rng_path = tmp / ("rng_" + std::to_string(s.rank) + ".pt");
  rng.save_to(rng_path.string());
  worker::Sync(rng_path);
  if (!writer) return;
  std::vector<fs::path> written;
  for (std::size_t i = 0; i < s.modules.size(); ++i) {
    torch::serialize::OutputArchive archive;
    s.modules[i]->save(archive);
    written.push_back(tmp / ("model_" + std::to_string(i) + ".pt"));
    archive.save_to(written.back().string());
  }
  for (std::size_t i = 0; i < s.optimizers.size(); ++i) {
    torch::serialize::OutputArchive archive;
    s.optimizers[i]->save(archive);
    written.push_back(tmp / ("optimizer_" + std::to_string(i) + ".pt"));
    archive.save_to(written.back().string());
  }
  torch::serialize::OutputArchive meta;
  internal::WriteMeta(s, meta);
  written.push_back(tmp / worker::kCheckpointMeta);
  meta.save_to(written.back().string());
  for (const fs::path& path : written) worker::Sync(path);
}

}  // namespace

namespace internal {

void WriteMeta(const AcceleratorState& s, torch::serialize::OutputArchive& meta) {
  const auto [epoch, position] = DataPosition(s);
  meta.write("steps", Scalar64(s.steps));
  meta.write("skipped", Scalar64(s.skipped));
  meta.write("micro_step", Scalar64(s.micro_step));
  meta.write("world", Scalar64(s.world));
  meta.write("modules", Scalar64(static_cast<std::int64_t>(s.modules.size())));
  meta.write("optimizers", Scalar64(static_cast<std::int64_t>(s.optimizers.size())));
  meta.write("scale", ScalarF64(s.scaler ? s.scaler->scale() : 1.0));
  meta.write("growth_tracker", Scalar64(s.scaler ? s.scaler->growth_tracker() : 0));
  meta.write("data_epoch", Scalar64(epoch));
  meta.write("data_position", Scalar64(position));
}

void ReadMeta(AcceleratorState& s, torch::serialize::InputArchive& meta) {
  auto read = [&](const char* key) {
    at::Tensor t;
    meta.read(key, t);
    return t.item<std::int64_t>();
  };
  s.steps = read("steps");
  s.skipped = read("skipped");
  s.micro_step = read("micro_step");
  if (s.scaler) {
    at::Tensor scale;
    meta.read("scale", scale);
    s.scaler->Restore(scale.item<double>(), read("growth_tracker"));
  }
  at::Tensor epoch, position;  // absent in checkpoints of older versions: the loader from 0
  if (meta.try_read("data_epoch", epoch) && meta.try_read("data_position", position)) {
    ResumeData(s, epoch.item<std::int64_t>(), position.item<std::int64_t>());
  }
}

}  // namespace internal

void Accelerator::save_state(const std::string& dir) {
  auto& s = *state_;
  internal::SyncDeviceCounters(s);  // a compiled step's skips and AdamW counts
  s.FinishScalerIteration();        // the scale a step already decided is the one saved
  const worker::CheckpointPaths paths(dir);
  // Every rank draws a nonce; the largest is this save's, so the writers' claims cannot collide
  // with a crashed save's.
  const std::uint64_t nonce = static_cast<std::uint64_t>(
      AllReduceInts(s, {static_cast<std::int64_t>(worker::RandomNonce() >> 1)}, ReduceOp::kMax)[0]);
  bool writer = false;
  if (is_local_main_process()) {
    Guard("save state", paths.tmp, [&] {
      writer = worker::ClaimWriter(paths, nonce);
      if (writer) worker::ClearStale(paths, nonce);
    });
  }
  wait_for_everyone();  // one writer per directory, and every tmp is clean
  Guard("save state", paths.tmp, [&] {
    if (writer) worker::DropClaim(paths, nonce);
    WriteFiles(s, paths.tmp, writer);
  });
  wait_for_everyone();  // every file of every directory is written: the save is complete
  if (writer) Guard("save state", paths.final_dir, [&] { worker::Promote(paths); });
  wait_for_everyone();  // every directory holds the new checkpoint
  if (writer) Guard("save state", paths.old, [&] { worker::DropOld(paths); });
  wait_for_everyone();
}

bool Accelerator::has_state(const std::string& dir) {
  // A process that joined a running job holds the job's state, newer than any checkpoint; the
  // ranks it joined are in their training loop, not here.
  if (internal::Joined(*state_)) return false;
  std::optional<fs::path> found;
  Guard("find state", dir, [&] { found = AgreedCheckpoint(*state_, dir); });
  return found.has_value();
}

void Accelerator::load_state(const std::string& dir) {
  auto& s = *state_;
  if (internal::Joined(s)) {  // as has_state: the job's state is here already
    if (s.local_rank == 0) {
      std::cerr << "[accel] load_state(" << dir << "): skipped: this process joined the running "
                << "job and holds its state (step " << s.steps << ")\n";
    }
    return;
  }
  std::optional<fs::path> agreed;
  Guard("load state", dir, [&] { agreed = AgreedCheckpoint(s, dir); });
  if (!agreed) {
    throw Error("load state", dir,
                "no checkpoint that every rank has (neither the directory nor " + dir +
                    ".old holds one here)");
  }
  const fs::path from = *agreed;
  internal::SyncDeviceCounters(s);  // into the state that is about to be replaced
  ++s.state_version;  // new parameter and optimizer tensors: compiled steps capture again
  Guard("load state", from, [&] {
    torch::serialize::InputArchive meta;
    meta.load_from((from / worker::kCheckpointMeta).string());
    auto read = [&](const char* key) {
      at::Tensor t;
      meta.read(key, t);
      return t;
    };
    // Another world size is fine: parameters and optimizer state are the same on every rank,
    // and the data position is split over this world (docs/libaccel.md "In-place recovery").
    if (read("modules").item<std::int64_t>() != static_cast<std::int64_t>(s.modules.size()) ||
        read("optimizers").item<std::int64_t>() != static_cast<std::int64_t>(s.optimizers.size())) {
      throw Error("load state", from.string(),
                  "saved with a different number of prepared modules or optimizers");
    }
    for (std::size_t i = 0; i < s.modules.size(); ++i) {
      torch::serialize::InputArchive archive;
      archive.load_from((from / ("model_" + std::to_string(i) + ".pt")).string(), s.device);
      s.modules[i]->load(archive);
    }
    for (std::size_t i = 0; i < s.optimizers.size(); ++i) {
      torch::serialize::InputArchive archive;
      archive.load_from((from / ("optimizer_" + std::to_string(i) + ".pt")).string(), s.device);
      // The checkpoint's state only, as a restarted process has it (LibTorch's load overwrites
      // the entries it has and keeps the rest, e.g. momentum buffers created after the save).
      s.optimizers[i]->state().clear();
      s.optimizers[i]->load(archive);
    }
    internal::ReadMeta(s, meta);
    // A rank the checkpoint's world did not have keeps its own generator state.
    const fs::path rng_path = from / ("rng_" + std::to_string(s.rank) + ".pt");
    if (!fs::exists(rng_path)) return;
    torch::serialize::InputArchive rng;
    rng.load_from(rng_path.string());
    at::Tensor cpu_state;
    rng.read("cpu", cpu_state);
    SetGeneratorState(at::detail::getDefaultCPUGenerator(), cpu_state);
    at::Tensor cuda_state;
    if (s.device.is_cuda() && rng.try_read("cuda", cuda_state)) {
      SetGeneratorState(at::globalContext().defaultGenerator(s.device), cuda_state);
    }
  });
  // As a process restarted from this checkpoint: no gradients, no half-done accumulation window
  // or loss-scaling iteration (what this process accumulated belongs to parameters just replaced).
  s.scale_update_pending = false;
  s.iteration_found = at::Tensor();
  s.unscaled.clear();
  s.unscale_found.clear();
  s.unsynced = false;
  if (s.grad_sync) {
    s.grad_sync->ResetGrads();
  } else {
    for (auto& p : internal::PreparedParameters(s)) p.mutable_grad().reset();
  }
  if (s.progress) s.progress->Write(static_cast<std::uint64_t>(s.steps));
  if (!s.options.generation_file.empty()) {  // recover() comes back to this state
    s.rng_at_step = GeneratorState(at::detail::getDefaultCPUGenerator());
    s.window_samples = 0;
  }
  wait_for_everyone();
}

}  // namespace accel
