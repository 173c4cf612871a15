#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "accel/data.h"
#include "accel/error.h"

namespace accel {
namespace {

using ::testing::ElementsAre;

TEST(SamplerTest, MatchesTorchDistributedSampler) {
  // /usr/bin/python3: DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=True, seed=7)
  const std::vector<std::vector<std::int64_t>> epoch0 = {{5, 4, 9, 2}, {0, 1, 6, 5}, {3, 7, 8, 0}};
  const std::vector<std::vector<std::int64_t>> epoch1 = {{3, 1, 4, 9}, {5, 2, 7, 3}, {0, 6, 8, 5}};
  for (int r = 0; r < 3; ++r) {
    DistributedSampler s(10, 3, r, true, 7);
    EXPECT_EQ(s.Indices(), epoch0[r]) << "rank " << r;
    s.set_epoch(1);
    EXPECT_EQ(s.Indices(), epoch1[r]) << "rank " << r;
  }
}

TEST(SamplerTest, ShardsAreDisjointCompleteAndEqual) {
  for (int world : {1, 2, 3, 4, 7}) {
    for (std::int64_t n : {0, 1, 5, 16, 101}) {
      std::multiset<std::int64_t> all;
      std::size_t len = 0;
      for (int r = 0; r < world; ++r) {
        DistributedSampler s(n, world, r, true, 42);
        s.set_epoch(3);
        auto idx = s.Indices();
        if (r == 0) len = idx.size();
        EXPECT_EQ(idx.size(), len) << "world " << world << " n " << n;
        EXPECT_EQ(static_cast<std::int64_t>(idx.size()), s.num_samples());
        all.insert(idx.begin(), idx.end());
      }
      // Complete, and only the wrap-around padding (< world samples) repeats.
      std::set<std::int64_t> distinct(all.begin(), all.end());
      EXPECT_EQ(static_cast<std::int64_t>(distinct.size()), n);
      EXPECT_LT(all.size() - distinct.size(), static_cast<std::size_t>(world));
      if (n > 0) {
        EXPECT_EQ(*distinct.begin(), 0);
        EXPECT_EQ(*distinct.rbegin(), n - 1);
      }
    }
  }
}

TEST(SamplerTest, EpochChangesTheOrderDeterministically) {
  DistributedSampler a(100, 2, 0, true, 1), b(100, 2, 0, true, 1);
  a.set_epoch(5);
  b.set_epoch(5);
  EXPECT_EQ(a.Indices(), b.Indices());
  b.set_epoch(6);
  EXPECT_NE(a.Indices(), b.Indices());
  DistributedSampler plain(6, 2, 1, false, 0);
  EXPECT_THAT(plain.Indices(), ElementsAre(1, 3, 5));
}

TEST(SamplerTest, RejectsBadArguments) {
  EXPECT_THROW(DistributedSampler(10, 0, 0), Error);
  EXPECT_THROW(DistributedSampler(10, 2, 2), Error);
  EXPECT_THROW(DistributedSampler(-1, 2, 0), Error);
}

TEST(DataLoaderTest, SameBatchCountOnEveryRankAndLastBatchHook) {
  at::Tensor data = at::arange(11, at::kFloat).unsqueeze(1);
  at::Tensor target = at::arange(11, at::kLong);
  std::vector<std::int64_t> counts;
  for (int r = 0; r < 3; ++r) {
    int lasts = 0;
    std::int64_t hooked_samples = 0;
    DataLoader loader(DistributedSampler(11, 3, r, false), 2, DataLoader::TensorFetch(data, target),
                      c10::Device(c10::kCPU), [&](bool last, std::int64_t n) {
                        lasts += last ? 1 : 0;
                        hooked_samples += n;
                      });
    std::int64_t batches = 0;
    std::int64_t samples = 0;
    for (const Batch& b : loader) {
      ++batches;
      samples += b.data.size(0);
      // The sample is its own index: data row == target.
      EXPECT_TRUE(at::equal(b.data.squeeze(1).to(at::kLong), b.target));
    }
    EXPECT_EQ(batches, loader.size());
    EXPECT_EQ(samples, 4);  // ceil(11 / 3)
    EXPECT_EQ(lasts, 1);
    EXPECT_EQ(hooked_samples, 4);
    counts.push_back(batches);
  }
  EXPECT_THAT(counts, ElementsAre(2, 2, 2));
}

TEST(DataLoaderTest, RejectsMismatchedTensors) {
  EXPECT_THROW(DataLoader::TensorFetch(at::zeros({3, 2}), at::zeros({4})), Error);
}

}  // namespace
}  // namespace accel
