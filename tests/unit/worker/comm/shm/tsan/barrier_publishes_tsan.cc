// ShmSync's barrier publishes what each rank wrote before it, checked by ThreadSanitizer (issue 23,
// the shared-memory group's memory ordering). Built from the product's sync.cc and segment.cc with
// -fsanitize=thread (tests/unit/CMakeLists.txt); run with TSAN_OPTIONS=halt_on_error=1:exitcode=66.
//
// Four threads share ONE mapping of a segment. Each writes its slot with plain stores, passes
// the barrier, reads every slot with plain loads and passes a second barrier. TSan models the C++
// memory model, so on x86 too it reports those plain accesses as a data race unless the barrier
// (the seq store of an arrival, the seq loads of AllArrived) creates happens-before: made relaxed,
// either one fails this test with "WARNING: ThreadSanitizer: data race".
//
// What it cannot check (docs/libaccel.md): finding 4, acquire vs seq_cst in the sleep/wake
// handshake (a lost wake-up, not a data race; TSan treats acquire and seq_cst loads alike, and
// x86 compiles both to the same instruction). Nor can it run over ShmGroup itself: each rank maps
// the segment at its own address, and TSan's shadow memory is per address.
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "worker/src/comm/shm/segment.h"
#include "worker/src/comm/shm/sync.h"

int main() {
  using accel::worker::shm::ShmSegment;
  using accel::worker::shm::ShmSync;
  constexpr int kRanks = 4;
  constexpr int kIterations = 300;
  constexpr int kInts = 64;
  ShmSegment segment = ShmSegment::Create(accel::worker::shm::SegmentBytes(kRanks, 4096));
  segment.header()->ranks = kRanks;
  segment.header()->slot_bytes = 4096;
  std::vector<int> wrong(kRanks, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      ShmSync sync(segment, r, kRanks);
      const auto deadline = [] {
        return std::chrono::steady_clock::now() + std::chrono::seconds(30);
      };
      for (int i = 0; i < kIterations; ++i) {
        int* mine = reinterpret_cast<int*>(segment.slot(i & 1, r));
        for (int k = 0; k < kInts; ++k) mine[k] = i * kRanks + r;
        sync.Barrier("publish", deadline());
        for (int q = 0; q < kRanks; ++q) {
          const int* theirs = reinterpret_cast<const int*>(segment.slot(i & 1, q));
          for (int k = 0; k < kInts; ++k) wrong[r] += theirs[k] != i * kRanks + q ? 1 : 0;
        }
        sync.Barrier("consume", deadline());
      }
    });
  }
  for (auto& t : threads) t.join();
  int total = 0;
  for (int w : wrong) total += w;
  std::printf("%d barriers x %d ranks: %d wrong values\n", 2 * kIterations, kRanks, total);
  return total == 0 ? 0 : 1;
}
