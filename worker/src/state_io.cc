// Accelerator::save_state / load_state.
//
// Layout of a checkpoint directory:
//   model_<i>.pt       prepared module i (written by each machine's local main process)
//   optimizer_<i>.pt   registered optimizer i
//   accelerator.pt     step counters, accumulation position, loss scale and growth tracker, world
//   rng_<rank>.pt      each rank's CPU (and CUDA) generator state
// Written into "<dir>.tmp", then "<dir>" (if any) is renamed to "<dir>.old", "<dir>.tmp" to "<dir>"
// and "<dir>.old" removed: a crash at any point leaves either the old or the new checkpoint whole
// (load_state falls back to "<dir>.old" when "<dir>" is missing).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>

#include "accel/accelerator.h"
#include "accel/error.h"
#include "worker/src/accelerator_state.h"

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

}  // namespace

void Accelerator::save_state(const std::string& dir) {
  auto& s = *state_;
  const fs::path final_dir(dir);
  const fs::path tmp(dir + ".tmp");
  const fs::path old(dir + ".old");
  const bool writer = is_local_main_process();
  wait_for_everyone();
  if (writer) {
    Guard("save state", tmp, [&] {
      fs::remove_all(tmp);
      fs::create_directories(tmp);
    });
  }
  wait_for_everyone();
  Guard("save state", tmp, [&] {
    torch::serialize::OutputArchive rng;
    rng.write("cpu", GeneratorState(at::detail::getDefaultCPUGenerator()));
    if (s.device.is_cuda())
      rng.write("cuda", GeneratorState(at::globalContext().defaultGenerator(s.device)));
    rng.save_to((tmp / ("rng_" + std::to_string(s.rank) + ".pt")).string());
    if (!writer) return;
    for (std::size_t i = 0; i < s.modules.size(); ++i) {
      torch::serialize::OutputArchive archive;
      s.modules[i]->save(archive);
      archive.save_to((tmp / ("model_" + std::to_string(i) + ".pt")).string());
    }
    for (std::size_t i = 0; i < s.optimizers.size(); ++i) {
      torch::serialize::OutputArchive archive;
      s.optimizers[i]->save(archive);
      archive.save_to((tmp / ("optimizer_" + std::to_string(i) + ".pt")).string());
    }
    torch::serialize::OutputArchive meta;
    meta.write("steps", Scalar64(s.steps));
    meta.write("skipped", Scalar64(s.skipped));
    meta.write("micro_step", Scalar64(s.micro_step));
    meta.write("world", Scalar64(s.world));
    meta.write("modules", Scalar64(static_cast<std::int64_t>(s.modules.size())));
    meta.write("optimizers", Scalar64(static_cast<std::int64_t>(s.optimizers.size())));
    meta.write("scale", ScalarF64(s.scaler ? s.scaler->scale() : 1.0));
    meta.write("growth_tracker", Scalar64(s.scaler ? s.scaler->growth_tracker() : 0));
    meta.save_to((tmp / "accelerator.pt").string());
  });
  wait_for_everyone();
  if (writer) {
    Guard("save state", final_dir, [&] {
      fs::remove_all(old);
      if (fs::exists(final_dir)) fs::rename(final_dir, old);
      fs::rename(tmp, final_dir);
      fs::remove_all(old);
    });
  }
  wait_for_everyone();
}

void Accelerator::load_state(const std::string& dir) {
  auto& s = *state_;
  fs::path from(dir);
  if (!fs::exists(from) && fs::exists(dir + ".old")) from = dir + ".old";
  if (!fs::exists(from)) throw Error("load state", dir, "no such checkpoint directory");
  Guard("load state", from, [&] {
    torch::serialize::InputArchive meta;
    meta.load_from((from / "accelerator.pt").string());
    auto read = [&](const char* key) {
      at::Tensor t;
      meta.read(key, t);
      return t;
    };
    const std::int64_t world = read("world").item<std::int64_t>();
    if (world != s.world) {
      throw Error("load state", from.string(),
                  "saved with world size " + std::to_string(world) + ", running with " +
                      std::to_string(s.world));
    }
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
      s.optimizers[i]->load(archive);
    }
    s.steps = read("steps").item<std::int64_t>();
    s.skipped = read("skipped").item<std::int64_t>();
    s.micro_step = read("micro_step").item<std::int64_t>();
    if (s.scaler)
      s.scaler->Restore(read("scale").item<double>(), read("growth_tracker").item<std::int64_t>());
    torch::serialize::InputArchive rng;
    rng.load_from((from / ("rng_" + std::to_string(s.rank) + ".pt")).string());
    at::Tensor cpu_state;
    rng.read("cpu", cpu_state);
    SetGeneratorState(at::detail::getDefaultCPUGenerator(), cpu_state);
    at::Tensor cuda_state;
    if (s.device.is_cuda() && rng.try_read("cuda", cuda_state)) {
      SetGeneratorState(at::globalContext().defaultGenerator(s.device), cuda_state);
    }
  });
  if (s.progress) s.progress->Write(static_cast<std::uint64_t>(s.steps));
  wait_for_everyone();
}

}  // namespace accel
