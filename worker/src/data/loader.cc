// DistributedSampler and DataLoader (accel/data.h).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "accel/accelerator.h"
#include "accel/data.h"
#include "accel/error.h"

namespace accel {

DistributedSampler::DistributedSampler(std::int64_t dataset_size, int num_replicas, int rank,
                                       bool shuffle, std::uint64_t seed)
    : dataset_size_(dataset_size),
      num_replicas_(num_replicas),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed) {
  if (num_replicas < 1) {
    throw Error("create sampler", "",
                "num_replicas must be >= 1, got " + std::to_string(num_replicas));
  }
  if (rank < 0 || rank >= num_replicas) {
    throw Error(
        "create sampler", "",
        "rank " + std::to_string(rank) + " outside [0, " + std::to_string(num_replicas) + ")");
  }
  if (dataset_size < 0) throw Error("create sampler", "", "negative dataset size");
}

std::int64_t DistributedSampler::num_samples() const {
  const std::int64_t left = dataset_size_ - start_;
  return left <= 0 ? 0 : (left + num_replicas_ - 1) / num_replicas_;
}

void DistributedSampler::Resume(std::int64_t epoch, std::int64_t start, int num_replicas,
                                int rank) {
  if (num_replicas < 1 || rank < 0 || rank >= num_replicas || start < 0 || epoch < 0) {
    throw Error("resume sampler", "",
                "epoch " + std::to_string(epoch) + ", start " + std::to_string(start) + ", rank " +
                    std::to_string(rank) + " of " + std::to_string(num_replicas) +
                    " is out of range");
  }
  epoch_ = epoch;
  start_ = start;
  num_replicas_ = num_replicas;
  rank_ = rank;
}

std::vector<std::int64_t> DistributedSampler::Indices() const {
  std::vector<std::int64_t> order(static_cast<std::size_t>(dataset_size_));
  if (shuffle_) {
    // torch.utils.data.DistributedSampler: randperm with a generator seeded by seed + epoch.
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed_ + static_cast<std::uint64_t>(epoch_));
    at::Tensor perm = at::randperm(dataset_size_, gen, at::TensorOptions().dtype(at::kLong));
    const std::int64_t* p = perm.data_ptr<std::int64_t>();
    for (std::int64_t i = 0; i < dataset_size_; ++i) order[static_cast<std::size_t>(i)] = p[i];
  } else {
    for (std::int64_t i = 0; i < dataset_size_; ++i) order[static_cast<std::size_t>(i)] = i;
  }
  std::vector<std::int64_t> mine;
  if (dataset_size_ == 0) return mine;
  const std::int64_t end = start_ + num_samples() * num_replicas_;
  mine.reserve(static_cast<std::size_t>(num_samples()));
  for (std::int64_t pos = start_ + rank_; pos < end; pos += num_replicas_) {
    mine.push_back(order[static_cast<std::size_t>(pos % dataset_size_)]);  // wrap-around padding
  }
  return mine;
}

DataLoader::DataLoader(DistributedSampler sampler, std::int64_t batch_size, FetchFn fetch,
                       c10::Device device, BatchHook hook)
    : DataLoader(std::make_shared<DistributedSampler>(std::move(sampler)), batch_size,
                 std::move(fetch), device, std::move(hook)) {}

DataLoader::DataLoader(std::shared_ptr<DistributedSampler> sampler, std::int64_t batch_size,
                       FetchFn fetch, c10::Device device, BatchHook hook)
    : sampler_(std::move(sampler)),
      last_indices_(std::make_shared<std::vector<std::int64_t>>()),
      batch_size_(batch_size),
      fetch_(std::move(fetch)),
      device_(device),
      hook_(std::move(hook)) {
  if (batch_size < 1) {
    throw Error("create data loader", "",
                "batch_size must be >= 1, got " + std::to_string(batch_size));
  }
  if (!fetch_) throw Error("create data loader", "", "no fetch function");
  if (!sampler_) throw Error("create data loader", "", "no sampler");
}

// A host tensor goes to a CUDA device through pinned memory, asynchronously: the host does not
// wait for the device to drain its queue (a pageable copy does), so it prepares the next step
// while the device runs this one. The pinned block is reused only after the copy (LibTorch's
// caching host allocator records the copy's stream).
namespace {
at::Tensor ToDevice(const at::Tensor& t, const c10::Device& device) {
  if (!device.is_cuda() || !t.device().is_cpu()) return t.to(device);
  return t.pin_memory().to(device, /*non_blocking=*/true);
}
}  // namespace

DataLoader::FetchFn DataLoader::TensorFetch(at::Tensor data, at::Tensor target) {
  if (data.size(0) != target.size(0)) {
    throw Error("create data loader", "",
                "data has " + std::to_string(data.size(0)) + " rows but target has " +
                    std::to_string(target.size(0)));
  }
  return [data, target](const std::vector<std::int64_t>& indices) {
    at::Tensor idx = at::tensor(indices, at::TensorOptions().dtype(at::kLong));
    return Batch{data.index_select(0, ToDevice(idx, data.device())),
                 target.index_select(0, ToDevice(idx, target.device()))};
  };
}

std::int64_t DataLoader::size() const {
  return (sampler_->num_samples() + batch_size_ - 1) / batch_size_;
}

DataLoader::Iterator DataLoader::begin() const {
  Iterator it(this, 0);
  sampler_->BeginPass();
  it.indices_ = std::make_shared<const std::vector<std::int64_t>>(sampler_->Indices());
  it.Load();
  return it;
}

DataLoader::Iterator DataLoader::end() const { return Iterator(this, size()); }

DataLoader::Iterator::Iterator(const DataLoader* loader, std::int64_t batch)
    : loader_(loader), batch_(batch) {}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  ++batch_;
  Load();
  return *this;
}

void DataLoader::Iterator::Load() {
  const std::int64_t batches = loader_->size();
  if (batch_ >= batches) {
    current_ = Batch{};
    if (batch_ == batches) loader_->sampler_->EndPass();  // the pass is over: next one from 0
    return;
  }
  const std::int64_t begin = batch_ * loader_->batch_size_;
  const std::int64_t end = std::min<std::int64_t>(begin + loader_->batch_size_,
                                                  static_cast<std::int64_t>(indices_->size()));
  std::vector<std::int64_t> chunk(indices_->begin() + begin, indices_->begin() + end);
  Batch batch = loader_->fetch_(chunk);
  current_ =
      Batch{ToDevice(batch.data, loader_->device_), ToDevice(batch.target, loader_->device_)};
  *loader_->last_indices_ = std::move(chunk);
  if (loader_->hook_) loader_->hook_(batch_ + 1 == batches, end - begin);
}

namespace internal {
Batch StackExamples(std::vector<at::Tensor> data, std::vector<at::Tensor> target) {
  return Batch{at::stack(data), at::stack(target)};
}
}  // namespace internal

}  // namespace accel
