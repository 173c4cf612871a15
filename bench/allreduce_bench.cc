// allreduce_bench: one rank of libaccel's all-reduce benchmark (run it under accel-launch; the
// driver is bench/allreduce_bench.py). For each size, float32 SUM all-reduces through the
// communicator libaccel picks (shared memory between the ranks of one machine by default,
// ACCEL_SHM=off for Gloo), median of many; rank 0 also times a plain memcpy of the same size in
// the same run (the floor). Prints one JSON line per size on rank 0:
//   {"bytes": N, "iters": K, "median_us": X, "memcpy_us": Y}
// Usage: allreduce_bench [--min-bytes 4096] [--max-bytes 67108864] [--budget-mb 512]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "accel/accelerator.h"

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t min_bytes = 4096, max_bytes = 64LL << 20, budget_mb = 512;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::int64_t value = std::atoll(argv[i + 1]);
    if (flag == "--min-bytes") {
      min_bytes = value;
    } else if (flag == "--max-bytes") {
      max_bytes = value;
    } else if (flag == "--budget-mb") {
      budget_mb = value;
    } else {
      std::fprintf(stderr, "allreduce_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (min_bytes < 4 || max_bytes < min_bytes || budget_mb < 1 || argc % 2 == 0) {
    std::fprintf(stderr,
                 "usage: allreduce_bench [--min-bytes N] [--max-bytes N] [--budget-mb N]\n");
    return 2;
  }
  try {
    accel::Accelerator acc(accel::Options::FromEnv());
    auto& comm = acc.communicator();
    const auto timeout = std::chrono::seconds(120);
    if (acc.is_main_process()) std::fprintf(stderr, "communicator %s\n", comm.name().c_str());
    for (std::int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
      const std::int64_t n = bytes / 4;
      // Enough iterations for a stable median, bounded by the byte budget.
      const int iters =
          static_cast<int>(std::clamp<std::int64_t>((budget_mb << 20) / bytes, 5, 2000));
      torch::Tensor t = torch::ones({n});
      for (int w = 0; w < 3; ++w) comm.AllReduce(t, accel::ReduceOp::kSum, timeout);
      acc.wait_for_everyone();
      std::vector<double> times;
      for (int k = 0; k < iters; ++k) {
        const auto start = Clock::now();
        comm.AllReduce(t, accel::ReduceOp::kSum, timeout);
        times.push_back(Us(start, Clock::now()));
      }
      std::vector<double> copies;
      if (acc.is_main_process()) {
        std::vector<char> src(static_cast<std::size_t>(bytes), 1),
            dst(static_cast<std::size_t>(bytes));
        for (int k = 0; k < iters; ++k) {
          const auto start = Clock::now();
          std::memcpy(dst.data(), src.data(), src.size());
          copies.push_back(Us(start, Clock::now()));
          src[static_cast<std::size_t>(k) % src.size()] ^= dst[0];  // keep the copy observable
        }
        std::printf("{\"bytes\": %lld, \"iters\": %d, \"median_us\": %.2f, \"memcpy_us\": %.2f}\n",
                    static_cast<long long>(bytes), iters, Median(times), Median(copies));
        std::fflush(stdout);
      }
      acc.wait_for_everyone();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
