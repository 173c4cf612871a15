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

RendezvousResult Generation(int attempt, int world, const std::string& membership) {
  RendezvousResult r;
  r.attempt = attempt;
  r.world_size = world;
  r.membership = membership;
  return r;
}

// Every (world before, world after, who joined) of up to 4 machines × 2 processes: kept exactly
// when the world shrank and nobody joined (a joiner's state transfer is not built).
TEST(InPlaceTest, WorkersAreKeptExactlyWhenMachinesLeftAndNoneJoined) {
  int kept = 0;
  for (int before = 1; before <= 4; ++before) {
    for (int after = 1; after <= 4; ++after) {
      for (bool joiner : {false, true}) {
        const std::string change =
            joiner ? "machine 1 (host b) left: lost: x; machine 3 (host d) joined"
                   : (after < before ? "machine 2 (host c) left: evicted: its rank 5 failed" : "");
        const RendezvousResult current = Generation(4, 2 * before, "");
        const RendezvousResult next = Generation(5, 2 * after, change);
        const bool want = after < before && !joiner;
        EXPECT_EQ(KeepsWorkers(current, next), want) << before << " -> " << after << " " << change;
        kept += want ? 1 : 0;
        EXPECT_FALSE(KeepsWorkers(next, current));  // never back to an older generation
      }
    }
  }
  EXPECT_EQ(kept, 6);
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
  ASSERT_TRUE(WriteGenerationFile(path, joined, 2).ok());
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
  EXPECT_FALSE(WriteGenerationFile(dir + "/missing/generation", joined, 2).ok());
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace accel::launcher
