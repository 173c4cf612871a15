// ShmSync's promises (issue 23), one thread per rank: ranks that call different collectives fail
// at once naming both calls; a barrier costs one wake-up, not one per arrival; a peer that is
// gone before the group watches it, or whose pidfd cannot be opened (seccomp), is named at once
// instead of at the deadline.
#include "worker/src/comm/shm/sync.h"

#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "accel/error.h"
#include "tests/testing/files.h"
#include "worker/src/comm/shm/group.h"
#include "worker/src/comm/shm/segment.h"
#include "worker/src/store/kv.h"

namespace accel::worker::shm {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Runs body(group) on `ranks` threads; returns each thread's error ("" when it succeeded).
std::vector<std::string> RunGroup(int ranks, const std::function<void(ShmGroup&)>& body) {
  static int groups = 0;
  static accel::testing::TempDir dir;
  std::vector<std::string> errors(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  const std::string key = "sync" + std::to_string(++groups);
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto kv = MakeFileKv(dir.path(), "ns");
        auto group = ShmGroup::Connect(*kv, key, r, ranks, 20 + r, 4096, milliseconds(5000));
        body(*group);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

Clock::time_point In(milliseconds ms) { return Clock::now() + ms; }

void ExpectMismatch(const std::vector<std::string>& errors, const std::string& detail) {
  for (const auto& e : errors) {
    EXPECT_NE(e.find("collective mismatch"), std::string::npos) << e;
    EXPECT_NE(e.find(detail), std::string::npos) << e;
  }
}

TEST(ShmSyncTest, DifferentCountsFailOnEveryRankNamingBothCalls) {
  const auto start = Clock::now();
  ExpectMismatch(RunGroup(2,
                          [](ShmGroup& g) {
                            std::vector<float> data(g.local_rank() == 0 ? 10 : 12, 1.0f);
                            g.AllReduce(data.data(), c10::kFloat,
                                        static_cast<std::int64_t>(data.size()), ReduceOp::kSum, 2,
                                        In(milliseconds(20000)));
                          }),
                 "all-reduce (sum) of 12 Float");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10)) << "found at the deadline only";
}

TEST(ShmSyncTest, DifferentDtypesOpsAndKindsFail) {
  ExpectMismatch(RunGroup(2,
                          [](ShmGroup& g) {
                            std::vector<std::int32_t> data(8, 1);
                            g.AllReduce(data.data(), g.local_rank() == 0 ? c10::kInt : c10::kFloat,
                                        8, ReduceOp::kSum, 2, In(milliseconds(20000)));
                          }),
                 "Int");
  ExpectMismatch(RunGroup(3,
                          [](ShmGroup& g) {
                            std::vector<float> data(8, 1.0f);
                            g.AllReduce(data.data(), c10::kFloat, 8,
                                        g.local_rank() == 2 ? ReduceOp::kMax : ReduceOp::kSum, 3,
                                        In(milliseconds(20000)));
                          }),
                 "max");
  ExpectMismatch(RunGroup(2,
                          [](ShmGroup& g) {
                            std::vector<float> data(8, 1.0f);
                            if (g.local_rank() == 0) {
                              g.Broadcast(data.data(), 32, 0, In(milliseconds(20000)));
                            } else {
                              g.AllReduce(data.data(), c10::kFloat, 8, ReduceOp::kSum, 2,
                                          In(milliseconds(20000)));
                            }
                          }),
                 "broadcast of 32 bytes");
}

// Review finding 6: every arrival woke every sleeper; now the barrier's completer wakes once.
TEST(ShmSyncTest, OneWakeUpPerBarrierNotOnePerArrival) {
  constexpr int kRanks = 4, kBarriers = 100;
  std::uint32_t wakeups = 0;
  auto errors = RunGroup(kRanks, [&](ShmGroup& g) {
    const std::uint32_t before = g.wakeups();
    for (int i = 0; i < kBarriers; ++i) {
      // The last rank is late every time: the others are asleep when the later ones arrive.
      if (g.local_rank() == kRanks - 1) std::this_thread::sleep_for(milliseconds(2));
      g.Barrier(In(milliseconds(20000)));
    }
    g.Barrier(In(milliseconds(20000)));
    if (g.local_rank() == 0) wakeups = g.wakeups() - before;
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  // Two ranks may both see the barrier complete (and both wake): at most 1.5 per barrier, where
  // waking on every arrival costs up to ranks - 1.
  EXPECT_LE(wakeups, static_cast<std::uint32_t>(kBarriers * 3 / 2))
      << "wake-ups for " << kBarriers << " barriers";
}

pid_t DeadPid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

// Review finding 5: pidfd_open failing with ESRCH (the peer is gone already) was ignored.
TEST(ShmSyncTest, PeerGoneBeforeTheGroupWatchesItIsNamedAtOnce) {
  ShmSegment segment = ShmSegment::Create(SegmentBytes(2, 4096));
  segment.ctrl(1)->pid.store(DeadPid());
  segment.ctrl(1)->global_rank.store(7);
  ShmSync sync(segment, 0, 2);
  try {
    sync.WatchPeers();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("global rank 7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exited"), std::string::npos) << e.what();
  }
}

// Makes pidfd_open fail with EPERM in this process (a container's seccomp profile).
bool DenyPidfdOpen() {
#ifdef SYS_pidfd_open
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_open, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
#else
  return false;
#endif
}

// Review finding 5: without a pidfd a dead peer was noticed only at the deadline.
TEST(ShmSyncTest, WithoutPidfdsAnExitedPeerIsStillNamedBeforeTheDeadline) {
  const pid_t child = ::fork();
  if (child == 0) {
    // In a child: the seccomp filter cannot be removed again.
    if (!DenyPidfdOpen()) ::_exit(3);
    ShmSegment segment = ShmSegment::Create(SegmentBytes(2, 4096));
    const pid_t peer = ::fork();  // exits soon and stays a zombie (never reaped)
    if (peer == 0) {
      ::usleep(200000);
      ::_exit(0);
    }
    segment.ctrl(1)->pid.store(peer);
    ShmSync sync(segment, 0, 2);
    sync.WatchPeers();
    const auto start = Clock::now();
    try {
      sync.Barrier("barrier", In(milliseconds(30000)));
    } catch (const Error& e) {
      const bool named = std::string(e.what()).find("exited") != std::string::npos;
      ::_exit(named && Clock::now() - start < std::chrono::seconds(5) ? 0 : 1);
    }
    ::_exit(2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: not named within 5 s; 2: no error; 3: could not install the seccomp filter";
}

}  // namespace
}  // namespace accel::worker::shm
