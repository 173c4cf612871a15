// A collective issued from inside backward (a SyncBatchNorm-style backward function) while DDP
// buckets all-reduce on the communication thread (issue 23, suspected finding): every rank must
// issue the collectives in one order, over shared memory (which would name a mismatch) and over
// Gloo (which would pair the wrong tensors or stall). backward_collective_rank makes the checks.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>

#include "common/exit_codes.h"
#include "tests/testing/files.h"
#include "tests/testing/mp_ranks.h"

namespace {

namespace fs = std::filesystem;

void ExpectOneOrder(const std::string& run_id, const std::map<std::string, std::string>& env) {
  const std::string dir = accel::testing::MakeTempDir("accel_backward_collective");
  ASSERT_FALSE(dir.empty());
  const auto results = accel::testing::RunRanks(BACKWARD_COLLECTIVE_RANK_PATH, 2, 0, {"30"}, env,
                                                dir, run_id, std::chrono::seconds(120));
  bool ok = true;
  for (std::size_t r = 0; r < results.size(); ++r) {
    EXPECT_EQ(results[r].exit_code, accel::kExitOk) << "rank " << r << ":\n" << results[r].output;
    ok = ok && results[r].exit_code == accel::kExitOk;
  }
  ASSERT_FALSE(results.empty());
  EXPECT_NE(results[0].output.find("backward collectives: 30 iterations ok"), std::string::npos)
      << results[0].output;
  if (ok) fs::remove_all(dir);
}

TEST(BackwardCollectiveTest, OneOrderOverSharedMemory) { ExpectOneOrder("shm", {}); }

TEST(BackwardCollectiveTest, OneOrderOverGloo) {
  ExpectOneOrder("gloo", {{"ACCEL_SHM", "off"}, {"ACCEL_COLLECTIVE_TIMEOUT_MS", "20000"}});
}

}  // namespace
