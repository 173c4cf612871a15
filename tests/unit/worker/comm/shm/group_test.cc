// ShmGroup with one thread per rank in this process (the segment, futexes and deadlines are the
// real ones; the file store stands in for the rendezvous store). Inputs are small integers, so
// every sum is exact and results are compared for equality. Dead peers and multi-process runs
// are covered by the mp tests (tests/mp/worker/accelerator_test.cc).
#include "worker/src/comm/shm/group.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "accel/error.h"
#include "tests/testing/files.h"
#include "worker/src/store/kv.h"

namespace accel::worker::shm {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class ShmGroupTest : public ::testing::Test {
 public:
  // Runs body(group) on `ranks` threads, each with its own group handle; returns each thread's
  // error message ("" when it succeeded).
  std::vector<std::string> RunGroup(int ranks, std::size_t slot_bytes,
                                    const std::function<void(ShmGroup&)>& body) {
    std::vector<std::string> errors(static_cast<std::size_t>(ranks));
    std::vector<std::thread> threads;
    const std::string key = "seg" + std::to_string(++groups_);
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        try {
          auto kv = MakeFileKv(dir_.path(), "ns");
          auto group =
              ShmGroup::Connect(*kv, key, r, ranks, 10 + r, slot_bytes, milliseconds(5000));
          body(*group);
        } catch (const std::exception& e) {
          errors[r] = e.what();
          if (errors[r].empty()) errors[r] = "?";
        }
      });
    }
    for (auto& t : threads) t.join();
    return errors;
  }

  accel::testing::TempDir dir_;
  int groups_ = 0;
};

Clock::time_point In(milliseconds ms) { return Clock::now() + ms; }

// Every rank contributes (rank + 1) * (i % 7 + 1) at index i: the sum is 3 * (i % 7 + 1) * ...
template <typename T>
void CheckSum(int ranks, std::int64_t count, std::size_t slot_bytes, c10::ScalarType dtype,
              ShmGroupTest& test) {
  std::atomic<int> mismatches{0};
  auto errors = test.RunGroup(ranks, slot_bytes, [&](ShmGroup& g) {
    std::vector<T> data(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
      data[i] = static_cast<T>(static_cast<float>((g.local_rank() + 1) * (i % 7 + 1)));
    }
    g.AllReduce(data.data(), dtype, count, ReduceOp::kSum, ranks, In(milliseconds(5000)));
    const int rank_sum = ranks * (ranks + 1) / 2;
    for (std::int64_t i = 0; i < count; ++i) {
      if (static_cast<float>(data[i]) != static_cast<float>(rank_sum * (i % 7 + 1))) ++mismatches;
    }
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(mismatches.load(), 0) << c10::toString(dtype) << " count " << count;
}

TEST_F(ShmGroupTest, SumIsExactForEveryDtypeAndSize) {
  // Counts: below one slice per rank, not a multiple of the ranks, several chunks of a slot.
  for (std::int64_t count : {1, 5, 1000, 4099}) {
    CheckSum<float>(3, count, 4096, c10::kFloat, *this);
    CheckSum<double>(3, count, 4096, c10::kDouble, *this);
    CheckSum<c10::Half>(3, count, 4096, c10::kHalf, *this);
    CheckSum<c10::BFloat16>(3, count, 4096, c10::kBFloat16, *this);
    CheckSum<std::int64_t>(3, count, 4096, c10::kLong, *this);
  }
  CheckSum<float>(2, 1 << 16, 1 << 12, c10::kFloat, *this);  // 64 chunks, both slot sets
  CheckSum<float>(4, 777, 256, c10::kFloat, *this);          // 4 ranks on 2 cores: futexes
}

TEST_F(ShmGroupTest, HalfTypesAccumulateInFloat32) {
  // In fp16, 2048 + 1 rounds back to 2048 (spacing 2), so a pairwise fp16 sum gives 2048; an
  // fp32 accumulator gives 2050, which fp16 holds exactly.
  std::atomic<int> wrong{0};
  auto errors = RunGroup(3, 4096, [&](ShmGroup& g) {
    std::vector<c10::Half> v(9, c10::Half(g.local_rank() == 0 ? 2048.0f : 1.0f));
    g.AllReduce(v.data(), c10::kHalf, 9, ReduceOp::kSum, 3, In(milliseconds(5000)));
    for (auto x : v) wrong += static_cast<float>(x) != 2050.0f;
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(ShmGroupTest, AvgMaxMinAndBroadcast) {
  std::atomic<int> wrong{0};
  auto errors = RunGroup(3, 4096, [&](ShmGroup& g) {
    const int r = g.local_rank();
    std::vector<float> avg(3000, 2.0f * static_cast<float>(r + 1));
    g.AllReduce(avg.data(), c10::kFloat, 3000, ReduceOp::kAvg, 3, In(milliseconds(5000)));
    for (float x : avg) wrong += x != 4.0f;
    std::vector<std::int32_t> mx(100, 100 * r), mn(100, 100 * r);
    g.AllReduce(mx.data(), c10::kInt, 100, ReduceOp::kMax, 3, In(milliseconds(5000)));
    g.AllReduce(mn.data(), c10::kInt, 100, ReduceOp::kMin, 3, In(milliseconds(5000)));
    for (int k = 0; k < 100; ++k) wrong += mx[k] != 200 || mn[k] != 0;
    std::vector<std::uint8_t> b(10000, static_cast<std::uint8_t>(r == 1 ? 7 : 0));
    g.Broadcast(b.data(), b.size(), 1, In(milliseconds(5000)));
    for (auto x : b) wrong += x != 7;
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(ShmGroupTest, MissingRankFailsEveryoneAtTheDeadlineNamingIt) {
  const auto start = Clock::now();
  auto errors = RunGroup(3, 4096, [&](ShmGroup& g) {
    if (g.local_rank() == 2) return;  // never arrives
    std::vector<float> v(10, 1.0f);
    g.AllReduce(v.data(), c10::kFloat, 10, ReduceOp::kSum, 3, In(milliseconds(300)));
  });
  const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  EXPECT_LT(took.count(), 3000);
  for (int r : {0, 1}) {
    EXPECT_NE(errors[r].find("local rank 2 (global rank 12"), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("all-reduce"), std::string::npos) << errors[r];
  }
  EXPECT_EQ(errors[2], "");
}

TEST_F(ShmGroupTest, FailWakesEveryWaiterWithTheSameCause) {
  auto errors = RunGroup(3, 4096, [&](ShmGroup& g) {
    if (g.local_rank() == 0) {
      std::this_thread::sleep_for(milliseconds(100));
      g.Fail("rank 0 gave up");
    }
    g.Barrier(In(milliseconds(20000)));  // far deadline: only Fail can end it quickly
  });
  for (const auto& e : errors) EXPECT_NE(e.find("rank 0 gave up"), std::string::npos) << e;
}

TEST_F(ShmGroupTest, ConnectFailsAtTheDeadlineWhenARankNeverComes) {
  auto kv = MakeFileKv(dir_.path(), "ns");
  const auto start = Clock::now();
  try {
    ShmGroup::Connect(*kv, "lonely", 0, 2, 0, 4096, milliseconds(300));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1 of 2 ranks attached"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration_cast<milliseconds>(Clock::now() - start).count(), 3000);
}

}  // namespace
}  // namespace accel::worker::shm
