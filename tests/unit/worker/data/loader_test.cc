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

// In-place recovery's sample rule (docs/libaccel.md): after every rank of a world W consumed c
// samples of a pass, resuming at position start + c*W over any world W' trains each remaining
// sample once; with what was consumed, the epoch exactly once (padding aside). Generated cases.
TEST(SamplerTest, ResumeSplitsTheRestOfTheEpochOverAnotherWorld) {
  std::uint64_t state = 12345;
  auto next = [&](std::int64_t bound) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::int64_t>((state >> 33) % static_cast<std::uint64_t>(bound));
  };
  for (int trial = 0; trial < 300; ++trial) {
    const std::int64_t n = 1 + next(120);
    const int world = 1 + static_cast<int>(next(7));
    const int world2 = 1 + static_cast<int>(next(7));
    DistributedSampler probe(n, world, 0, true, 9);
    const std::int64_t c = next(probe.num_samples() + 1);  // samples per rank done
    std::multiset<std::int64_t> done, rest;
    for (int r = 0; r < world; ++r) {
      DistributedSampler s(n, world, r, true, 9);
      s.set_epoch(2);
      auto idx = s.Indices();
      done.insert(idx.begin(), idx.begin() + c);
    }
    const std::int64_t start = c * world;
    std::int64_t extra = 0;  // wrap-around padding
    for (int r = 0; r < world2; ++r) {
      DistributedSampler s(n, world, 0, true, 9);
      s.Resume(2, start, world2, r);
      auto idx = s.Indices();
      EXPECT_EQ(static_cast<std::int64_t>(idx.size()), s.num_samples());
      rest.insert(idx.begin(), idx.end());
    }
    std::multiset<std::int64_t> all = done;
    all.insert(rest.begin(), rest.end());
    std::set<std::int64_t> distinct(all.begin(), all.end());
    ASSERT_EQ(static_cast<std::int64_t>(distinct.size()), n)
        << "n " << n << " world " << world << " -> " << world2 << " after " << c;
    extra = static_cast<std::int64_t>(all.size()) - n;
    // Only padding repeats: at most world - 1 at the first world's end (when c reached it)
    // plus world2 - 1 at the second's.
    EXPECT_LE(extra, (world - 1) + (world2 - 1));
    if (start < n && (n - start) % world2 == 0) {
      // No padding in the resumed pass: nothing done is trained again.
      for (std::int64_t i : rest) EXPECT_EQ(done.count(i), 0u) << "sample " << i;
    }
  }
}

TEST(SamplerTest, AnotherEpochOrAFinishedPassStartsAtZero) {
  DistributedSampler s(20, 2, 1, false, 0);
  s.Resume(3, 10, 2, 1);
  EXPECT_THAT(s.Indices(), ElementsAre(11, 13, 15, 17, 19));
  s.set_epoch(3);  // the same epoch keeps its start
  EXPECT_EQ(s.start(), 10);
  s.set_epoch(4);
  EXPECT_EQ(s.start(), 0);
  EXPECT_EQ(s.num_samples(), 10);
  s.Resume(4, 25, 2, 0);  // past the end: nothing left
  EXPECT_EQ(s.num_samples(), 0);
  EXPECT_TRUE(s.Indices().empty());
  EXPECT_THROW(s.Resume(4, 0, 2, 2), Error);
}

TEST(LoaderTest, APassOverTheResumedRestThenTheNextFromZero) {
  auto sampler = std::make_shared<DistributedSampler>(12, 2, 0, false, 0);
  sampler->Resume(0, 8, 2, 0);
  DataLoader loader(sampler, 2, DataLoader::TensorFetch(at::arange(12), at::arange(12)), at::kCPU);
  std::vector<std::int64_t> seen;
  for (const auto& batch : loader) {
    for (std::int64_t i = 0; i < batch.data.size(0); ++i)
      seen.push_back(batch.data[i].item<std::int64_t>());
    EXPECT_EQ(loader.last_indices().size(), static_cast<std::size_t>(batch.data.size(0)));
  }
  EXPECT_THAT(seen, ElementsAre(8, 10));
  seen.clear();
  for (const auto& batch : loader) seen.push_back(batch.data[0].item<std::int64_t>());
  EXPECT_THAT(seen, ElementsAre(0, 4, 8));  // the whole epoch again: batches of 2 from 0, 2, ...
}

}  // namespace
}  // namespace accel
