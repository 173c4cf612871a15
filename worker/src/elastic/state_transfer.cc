// The training state sent over the communicator at an in-place membership change
// (state_transfer.h).
#include "worker/src/elastic/state_transfer.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "accel/error.h"

namespace accel::internal {
namespace {

// Broadcasts `bytes` from `root` (every rank returns root's bytes).
std::string BroadcastBytes(AcceleratorState& s, std::string bytes, int root) {
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

}  // namespace

std::string SerializeTrainingState(AcceleratorState& s) {
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
  WriteMeta(s, meta);
  all.write("meta", meta);
  std::ostringstream out;
  all.save_to(out);
  return out.str();
}

void LoadTrainingState(AcceleratorState& s, const std::string& bytes) {
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
  ReadMeta(s, meta);
}

Agreement AgreeOnState(AcceleratorState& s, bool has_state, std::string* received) {
  // Ranks may stand one step apart when a collective completed on some before a peer died;
  // a joiner holds no step (-1).
  const auto [epoch, position] = DataPosition(s);
  at::Tensor mine =
      at::tensor(std::vector<std::int64_t>{has_state ? s.steps : -1, epoch, position}, at::kLong);
  at::Tensor all = s.comm->AllGather(mine.to(s.device), s.options.collective_timeout).cpu();
  Agreement a;
  for (int r = 0; r < s.world; ++r) {
    if (!at::equal(all[r], all[0])) a.same = false;
    if (all[r][0].item<std::int64_t>() < 0) ++a.joiners;
    if (all[r][0].item<std::int64_t>() > all[a.source][0].item<std::int64_t>()) a.source = r;
  }
  a.steps = all[a.source][0].item<std::int64_t>();
  a.epoch = all[a.source][1].item<std::int64_t>();
  a.position = all[a.source][2].item<std::int64_t>();
  if (a.steps < 0) {
    throw Error("agree on the training state", "rank " + std::to_string(s.rank),
                "no rank of generation " + std::to_string(s.generation) +
                    " holds it (every rank joined: nobody kept its workers)");
  }
  if (a.same) return a;
  std::string bytes = s.rank == a.source ? SerializeTrainingState(s) : std::string();
  bytes = BroadcastBytes(s, std::move(bytes), a.source);
  if (!has_state) {
    *received = std::move(bytes);
  } else if (s.rank != a.source) {
    LoadTrainingState(s, bytes);
  }
  return a;
}

}  // namespace accel::internal
