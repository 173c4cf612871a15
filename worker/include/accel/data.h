// DistributedSampler and DataLoader: each rank's disjoint shard of a dataset, in batches.
//
// DistributedSampler follows torch.utils.data.DistributedSampler (drop_last=false): the epoch's
// order is a permutation seeded by seed+epoch (identical on every rank), padded by wrapping to a
// multiple of num_replicas, and rank r takes positions r, r+W, r+2W... So shards are disjoint
// (apart from the wrap-around padding), together cover the dataset, and every rank gets the same
// number of samples and therefore the same number of batches. Strided shards also make
// "W ranks x accumulation A x micro-batch b" see exactly the samples of one batch of W*A*b.
//
// DataLoader is single-threaded and owns copies of its tensors (or its fetch function); it is not
// thread-safe. Iterating yields Batch values already on the loader's device.
#ifndef ACCEL_DATA_H_
#define ACCEL_DATA_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <vector>

namespace accel {

class DistributedSampler {
 public:
  // Throws accel::Error on num_replicas < 1, rank outside [0, num_replicas) or size < 0.
  DistributedSampler(std::int64_t dataset_size, int num_replicas, int rank, bool shuffle = true,
                     std::uint64_t seed = 0);

  // Selects the epoch: the shuffle order is a function of (seed, epoch) only.
  void set_epoch(std::int64_t epoch) { epoch_ = epoch; }
  std::int64_t epoch() const { return epoch_; }

  // Returns this rank's sample indices for the current epoch, num_samples() of them.
  std::vector<std::int64_t> Indices() const;
  // ceil(dataset_size / num_replicas): the same on every rank.
  std::int64_t num_samples() const;

 private:
  std::int64_t dataset_size_;
  int num_replicas_;
  int rank_;
  bool shuffle_;
  std::uint64_t seed_;
  std::int64_t epoch_ = 0;
};

struct Batch {
  at::Tensor data;
  at::Tensor target;
};

class DataLoader {
 public:
  // Returns the batch holding the given dataset indices (on any device; the loader moves it).
  using FetchFn = std::function<Batch(const std::vector<std::int64_t>& indices)>;
  // Called just before each batch is handed out, with its sample count and whether it is the
  // last batch of the epoch (the Accelerator forces a gradient sync at the end of the data, as
  // accelerate does, and counts the samples in the progress file).
  using BatchHook = std::function<void(bool last, std::int64_t samples)>;

  DataLoader(DistributedSampler sampler, std::int64_t batch_size, FetchFn fetch, c10::Device device,
             BatchHook hook = nullptr);

  // Tensor dataset: row i of `data` and of `target` form sample i.
  static FetchFn TensorFetch(at::Tensor data, at::Tensor target);

  void set_epoch(std::int64_t epoch) { sampler_.set_epoch(epoch); }
  // Number of batches per epoch on this rank (the last may be smaller than batch_size).
  std::int64_t size() const;
  std::int64_t batch_size() const { return batch_size_; }
  const DistributedSampler& sampler() const { return sampler_; }

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = const Batch*;
    using reference = const Batch&;

    const Batch& operator*() const { return current_; }
    const Batch* operator->() const { return &current_; }
    Iterator& operator++();
    bool operator==(const Iterator& other) const { return batch_ == other.batch_; }
    bool operator!=(const Iterator& other) const { return batch_ != other.batch_; }

   private:
    friend class DataLoader;
    Iterator(const DataLoader* loader, std::int64_t batch);
    void Load();

    const DataLoader* loader_ = nullptr;
    std::shared_ptr<const std::vector<std::int64_t>> indices_;
    std::int64_t batch_ = 0;
    Batch current_;
  };

  // Starts an epoch (the sampler's current one). Fetches lazily, one batch per increment.
  Iterator begin() const;
  Iterator end() const;

 private:
  DistributedSampler sampler_;
  std::int64_t batch_size_;
  FetchFn fetch_;
  c10::Device device_;
  BatchHook hook_;
};

}  // namespace accel

#endif  // ACCEL_DATA_H_
