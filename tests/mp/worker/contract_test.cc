// The Accelerator's contract at world 2 and 4 (tests/testing/contract): issue 23's probes, then
// the differential fuzzer's seeded sequences against the in-process reference, over the
// shared-memory communicator, Gloo alone, and two simulated machines (shared memory + Gloo).
// ACCEL_CONTRACT_FUZZ_COUNT / ACCEL_CONTRACT_FUZZ_FIRST override the number of sequences per
// configuration and the first seed (scripts/contract-fuzz runs thousands).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/exit_codes.h"
#include "tests/testing/files.h"
#include "tests/testing/mp_ranks.h"

namespace {

namespace fs = std::filesystem;

class ContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = accel::testing::MakeTempDir("accel_contract");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Runs the ranks; expects every one to exit 0 and returns rank 0's output.
  std::string Run(int world, int per_machine, const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env = {},
                  std::chrono::seconds deadline = std::chrono::seconds(240)) {
    const auto results = accel::testing::RunRanks(CONTRACT_RANK_PATH, world, per_machine, args, env,
                                                  dir_, "run" + std::to_string(++runs_), deadline);
    for (std::size_t r = 0; r < results.size(); ++r) {
      EXPECT_EQ(results[r].exit_code, accel::kExitOk) << "rank " << r << ":\n" << results[r].output;
    }
    return results.empty() ? "" : results[0].output;
  }

  void Probe(const std::string& name) {
    const std::string out = Run(2, 0, {"probe", dir_, name});
    EXPECT_NE(out.find("SUMMARY ran 1 ok 1 mismatched 0"), std::string::npos) << out;
  }

  // Runs `count` (or ACCEL_CONTRACT_FUZZ_COUNT) sequences from `first`; prints how many
  // sequences had each feature.
  void Fuzz(int world, int per_machine, int first, int count,
            const std::map<std::string, std::string>& env = {}) {
    if (const char* c = ::getenv("ACCEL_CONTRACT_FUZZ_COUNT")) count = std::atoi(c);
    if (const char* f = ::getenv("ACCEL_CONTRACT_FUZZ_FIRST")) first += std::atoi(f);
    const auto start = std::chrono::steady_clock::now();
    const std::string out =
        Run(world, per_machine, {"fuzz", dir_, std::to_string(first), std::to_string(count)}, env,
            std::chrono::seconds(60 + count * 2));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string want =
        "SUMMARY ran " + std::to_string(count) + " ok " + std::to_string(count) + " mismatched 0";
    EXPECT_NE(out.find(want), std::string::npos) << out;
    std::printf("world %d (%d per machine): %d sequences from seed %d in %.1f s\n", world,
                per_machine > 0 ? per_machine : world, count, first, seconds);
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("FEATURE ", 0) == 0 || line.rfind("SUMMARY", 0) == 0) {
        std::printf("  %s\n", line.c_str());
      }
    }
  }

  std::string dir_;
  int runs_ = 0;
};

// The standard LibTorch loop: opt.zero_grad() by hand (LibTorch 1.13 detach_()s the gradient).
TEST_F(ContractTest, ProbeZeroGradByHand) { Probe("zerograd"); }
// Parameters that require grad but are in no optimizer: their gradients are not re-summed.
TEST_F(ContractTest, ProbeParametersInNoOptimizer) { Probe("frozen"); }
// A step after the guard of a micro-step that did not sync: skipped, as in accelerate.
TEST_F(ContractTest, ProbeStepAfterNonSyncGuard) { Probe("guardstep"); }

TEST_F(ContractTest, FuzzWorld2SharedMemory) { Fuzz(2, 0, 0, 150); }
TEST_F(ContractTest, FuzzWorld4SharedMemory) { Fuzz(4, 0, 100000, 50); }
TEST_F(ContractTest, FuzzWorld2Gloo) { Fuzz(2, 0, 200000, 50, {{"ACCEL_SHM", "off"}}); }
// Two machines of two ranks: shared memory within, Gloo between the leaders.
TEST_F(ContractTest, FuzzWorld4TwoMachines) { Fuzz(4, 2, 300000, 40); }

}  // namespace
