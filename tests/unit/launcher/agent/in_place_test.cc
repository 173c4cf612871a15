// Unit tests of in-place recovery's rules (launcher/agent/in_place.h): which generation changes
// keep the workers, against the rule written out over generated cases, and the generation file
// the workers read (worker/src/elastic/generation.h parses it back).
#include "launcher/agent/in_place.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "worker/src/elastic/generation.h"

namespace accel::launcher {
namespace {

RendezvousResult Generation(int attempt, int world, const std::string& membership,
                            bool continues = false) {
  RendezvousResult r;
  r.attempt = attempt;
  r.world_size = world;
  r.membership = membership;
  r.continues = continues;
  return r;
}

// Every (attempt before, attempt after, world before, world after, continues) of up to 4
// machines x 2 processes, the membership text saying what the worlds imply: the workers are kept
// exactly when the generation is newer and the server says it continues, whatever the world did
// (machines left, joined, or both in one generation); never into an older or the same one.
TEST(InPlaceTest, WorkersAreKeptExactlyInANewerGenerationThatContinues) {
  int kept = 0;
  int cases = 0;
  for (int attempt_before = 0; attempt_before <= 2; ++attempt_before) {
    for (int attempt_after = 0; attempt_after <= 3; ++attempt_after) {
      for (int before = 1; before <= 4; ++before) {
        for (int after = 1; after <= 4; ++after) {
          for (bool continues : {false, true}) {
            const std::string change =
                after > before   ? "machine 3 (host d) joined"
                : after < before ? "machine 2 (host c) left: evicted: its rank 5 failed"
                                 : "machine 1 (host b) left: lost: x; machine 3 (host d) joined";
            const RendezvousResult current = Generation(attempt_before, 2 * before, "");
            const RendezvousResult next = Generation(attempt_after, 2 * after, change, continues);
            const bool want = attempt_after > attempt_before && continues;
            EXPECT_EQ(KeepsWorkers(current, next), want)
                << attempt_before << " -> " << attempt_after << ", world " << 2 * before << " -> "
                << 2 * after << ", continues " << continues;
            kept += want ? 1 : 0;
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 3 * 4 * 4 * 4 * 2);
  EXPECT_EQ(kept, (3 + 2 + 1) * 4 * 4);
}

TEST(InPlaceTest, TheGenerationFileIsWhatTheWorkersParse) {
  std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                    "/accel_in_place_XXXXXX";
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string path = dir + "/generation";
  RendezvousResult joined = Generation(3, 4, "machine 2 (host c) left: lost: x");
  joined.base_rank = 2;
  joined.group_rank = 1;
  joined.group_world_size = 2;
  joined.master_port = 29517;
  ASSERT_TRUE(WriteGenerationFile(path, joined, 2, /*joining=*/false, RecoverTimeoutMs(900)).ok());
  std::string error;
  const auto g = worker::ReadGeneration(path, &error);
  ASSERT_TRUE(g.has_value()) << error;
  EXPECT_EQ(g->number, 3);
  EXPECT_EQ(g->world, 4);
  EXPECT_EQ(g->base_rank, 2);
  EXPECT_EQ(g->group_rank, 1);
  EXPECT_EQ(g->group_world, 2);
  EXPECT_EQ(g->local_world, 2);
  EXPECT_EQ(g->store_attempt, 3);  // the store namespace the server serves for generation 3
  EXPECT_EQ(g->master_port, 29517);
  EXPECT_FALSE(g->joining);
  // recover() waits as long as the rendezvous: rdzv_timeout 900 s and 2 x 30 s.
  EXPECT_EQ(g->recover_timeout_ms, 960000);
  ASSERT_TRUE(WriteGenerationFile(path, joined, 2, /*joining=*/true).ok());
  const auto joining = worker::ReadGeneration(path, &error);
  ASSERT_TRUE(joining.has_value()) << error;
  EXPECT_TRUE(joining->joining);  // new workers receive the state from the running ones
  EXPECT_FALSE(WriteGenerationFile(dir + "/missing/generation", joined, 2, false).ok());
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace accel::launcher
