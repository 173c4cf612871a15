// DistributedSampler and DataLoader: each rank's disjoint shard of a dataset, in batches.
//
// DistributedSampler follows torch.utils.data.DistributedSampler (drop_last=false): the epoch's
// order is a permutation seeded by seed+epoch (identical on every rank), padded by wrapping to a
// multiple of num_replicas, and rank r takes positions r, r+W, r+2W... So shards are disjoint
// (apart from the wrap-around padding), together cover the dataset, and every rank gets the same
// number of samples and therefore the same number of batches. Strided shards also make
// "W ranks x accumulation A x micro-batch b" see exactly the samples of one batch of W*A*b.
//
// Elastic resume: a pass over an epoch may start at a position `start` of the epoch's (padded)
// order instead of 0 (Resume): rank r then takes start + r, start + r + W, ... So after every
// rank consumed c samples, exactly positions [start, start + c*W) are done, and the rest of the
// epoch can be split over another world size with none skipped or repeated
// (docs/libaccel.md "In-place recovery"). set_epoch to another epoch starts it at 0; a pass that
// reached its end makes the next pass start at 0.
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

  // Selects the epoch: the shuffle order is a function of (seed, epoch) only. Another epoch
  // than the current one starts at position 0; the current one keeps its start.
  void set_epoch(std::int64_t epoch) {
    if (epoch != epoch_) start_ = 0;
    epoch_ = epoch;
  }
  std::int64_t epoch() const { return epoch_; }

  // Returns this rank's sample indices for the current pass, num_samples() of them.
  std::vector<std::int64_t> Indices() const;
  // ceil((dataset_size - start) / num_replicas): the same on every rank (0 once start is past
  // the epoch's end).
  std::int64_t num_samples() const;

  // Where the pass begins in the epoch's order, and the world it is split over.
  std::int64_t start() const { return start_; }
  int num_replicas() const { return num_replicas_; }
  int rank() const { return rank_; }
  std::int64_t dataset_size() const { return dataset_size_; }
  // The next pass over `epoch` starts at position `start`, split over `num_replicas` ranks as
  // `rank`. Throws accel::Error on values out of range.
  void Resume(std::int64_t epoch, std::int64_t start, int num_replicas, int rank);
  // Called by the loader: a pass begins (pass() counts them) or reached its end (the next pass
  // starts at 0).
  void BeginPass() { ++pass_; }
  void EndPass() { start_ = 0; }
  std::int64_t pass() const { return pass_; }

 private:
  std::int64_t dataset_size_;
  int num_replicas_;
  int rank_;
  bool shuffle_;
  std::uint64_t seed_;
  std::int64_t epoch_ = 0;
  std::int64_t start_ = 0;
  std::int64_t pass_ = 0;
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
  // Same over a sampler shared with its owner (the Accelerator re-splits it in recover()).
  // Copies of a loader share its sampler.
  DataLoader(std::shared_ptr<DistributedSampler> sampler, std::int64_t batch_size, FetchFn fetch,
             c10::Device device, BatchHook hook = nullptr);

  // Tensor dataset: row i of `data` and of `target` form sample i.
  static FetchFn TensorFetch(at::Tensor data, at::Tensor target);

  void set_epoch(std::int64_t epoch) { sampler_->set_epoch(epoch); }
  // Number of batches per epoch on this rank (the last may be smaller than batch_size).
  std::int64_t size() const;
  std::int64_t batch_size() const { return batch_size_; }
  const DistributedSampler& sampler() const { return *sampler_; }
  // The dataset indices of the batch handed out last (empty before the first), e.g. for a
  // record of which samples each step trained on.
  const std::vector<std::int64_t>& last_indices() const { return *last_indices_; }

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
  std::shared_ptr<DistributedSampler> sampler_;
  std::shared_ptr<std::vector<std::int64_t>> last_indices_;
  std::int64_t batch_size_;
  FetchFn fetch_;
  c10::Device device_;
  BatchHook hook_;
};

}  // namespace accel

#endif  // ACCEL_DATA_H_
