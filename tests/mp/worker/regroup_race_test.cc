// A second membership change during a regroup (issue 35): libaccel without the launcher, this
// test writing the generation files as accel-launch does. Machines 0-1 (2 ranks each, of
// worker_elastic_rank) train at world 4 and wait after step K. Generation 1 adds machines 2 and
// 3; machine 2's ranks start joining, machine 3 never comes (its start-up failed, or it was lost
// before it wrote a key). Once every rank that came waits in generation 1's connect for machine
// 3's keys, generation 2 drops machine 3. Everyone must leave generation 1's connect at once,
// regroup at generation 2 (the survivors in recover(), the joiners in their Accelerator's
// constructor) with every rank's parameters equal and every sample of every epoch trained once.
// Before, every rank waited in generation 1's connect until the connect deadline (60 s here, 300 s
// by default) and failed.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/exit_codes.h"
#include "tests/testing/files.h"
#include "tests/testing/generation_files.h"
#include "tests/testing/mp_ranks.h"
#include "worker/src/elastic/generation.h"

namespace {

namespace fs = std::filesystem;
using accel::testing::RankRun;
using accel::testing::RunRanks;
using accel::worker::Generation;
using Clock = std::chrono::steady_clock;

constexpr int kPerMachine = 2;
// 3 steps of 4 x 4 samples leave 192 of the first epoch, a multiple of world 6: no wrap-around
// padding (torch's DistributedSampler repeats samples to fill the last batch of each rank), so
// every sample is trained exactly once.
constexpr int kJoinStep = 3;
constexpr std::int64_t kSamples = 240;  // worker_elastic_rank.cc's set
constexpr int kEpochs = 2;
const auto kDeadline = std::chrono::seconds(240);
// From generation 2's file to the joiners' first step. The connect deadline (60 s) bounded it
// before; a regroup that leaves generation 1's waits within a slice takes a few seconds on a
// loaded host.
constexpr double kRegroupLimitSeconds = 20.0;

Generation MakeGeneration(std::int64_t number, int machines, int machine, bool joining) {
  return accel::testing::MakeGeneration(number, machines, machine, kPerMachine, joining);
}

bool WaitFor(const std::vector<std::string>& paths, Clock::time_point end) {
  while (Clock::now() < end) {
    bool all = true;
    for (const auto& p : paths) all = all && fs::exists(p);
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

class RegroupRaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = accel::testing::MakeTempDir("accel_regroup_race");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  std::vector<RankRun> Run(int world, const std::string& tag, const std::string& mode,
                           int first = 0, int count = -1) {
    return RunRanks(ACCEL_WORKER_ELASTIC_RANK, world, kPerMachine,
                    {dir_, tag, mode, std::to_string(kJoinStep), dir_ + "/ckpt", "-"}, {}, dir_,
                    tag, kDeadline, first, count);
  }

  void Write(int machine, const Generation& g) {
    std::string error;
    ASSERT_TRUE(
        accel::worker::WriteGeneration(dir_ + "/gen_m" + std::to_string(machine), g, &error))
        << error;
  }

  // A key of the file store (tests/testing/mp_ranks.h: store_<tag>, namespace "<tag>.<attempt>",
  // '/' escaped) that rank `rank` writes when it enters generation `gen`'s connect.
  std::string HostKey(const std::string& tag, int gen, int rank) const {
    return dir_ + "/store_" + tag + "/" + tag + "." + std::to_string(gen) + "/pg0%2fg" +
           std::to_string(gen) + "%2fshm%2fhost%2f" + std::to_string(rank);
  }

  std::string dir_;
};

TEST_F(RegroupRaceTest, AMachineLostDuringTheRegroupEndsItsConnectAndTheJobRegroupsAgain) {
  for (int m = 0; m < 2; ++m) Write(m, MakeGeneration(0, 2, m, false));
  std::vector<RankRun> first, joiners;
  std::thread ranks([&] { first = Run(4, "race", "grow"); });
  const auto end = Clock::now() + kDeadline;
  std::vector<std::string> waiting;
  for (int r = 0; r < 4; ++r) waiting.push_back(dir_ + "/waiting_" + std::to_string(r));
  const bool waited = WaitFor(waiting, end);
  std::thread joining;
  bool connecting = false;
  std::chrono::system_clock::time_point published;
  if (waited) {
    // Generation 1: machines 0-3, 2 and 3 joining; only machine 2's ranks start.
    Write(2, MakeGeneration(1, 4, 2, true));
    for (int m = 0; m < 2; ++m) Write(m, MakeGeneration(1, 4, m, false));
    joining = std::thread([&] { joiners = Run(8, "race", "grow", 4, 2); });
    // Every rank that came is in generation 1's connect (machine 3's keys never come).
    std::vector<std::string> keys;
    for (int r = 0; r < 6; ++r) keys.push_back(HostKey("race", 1, r));
    connecting = WaitFor(keys, end);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    // Generation 2: machine 3 dropped. Machine 2's file still says joining (accel-launch keeps
    // it while those workers live: they may not have read generation 1 yet).
    published = std::chrono::system_clock::now();
    Write(2, MakeGeneration(2, 3, 2, true));
    for (int m = 0; m < 2; ++m) Write(m, MakeGeneration(2, 3, m, false));
    joining.join();
  }
  ranks.join();
  ASSERT_TRUE(waited) << "machines 0-1 never reached step " << kJoinStep;
  ASSERT_TRUE(connecting) << "not every rank entered generation 1's connect";

  const std::regex end_line("end pid (\\d+) rank (\\d) world 6 steps \\d+ generation 2");
  const std::regex start_line("start pid (\\d+) rank (\\d)");
  for (int r = 0; r < 6; ++r) {
    const RankRun& run = r < 4 ? first[r] : joiners[r - 4];
    ASSERT_EQ(run.exit_code, accel::kExitOk) << "rank " << r << ":\n" << run.output;
    std::smatch a, b;
    ASSERT_TRUE(std::regex_search(run.output, a, start_line)) << run.output;
    ASSERT_TRUE(std::regex_search(run.output, b, end_line)) << run.output;
    EXPECT_EQ(a[1], b[1]) << "rank " << r << " is not the same process";
  }
  // The joiners' first step, counted from generation 2's file.
  const std::regex recovered_line("recovered step (\\d+) at unix ms (\\d+)");
  for (int r = 4; r < 6; ++r) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(joiners[r - 4].output, m, recovered_line));
    EXPECT_EQ(std::stoll(m[1]), kJoinStep + 1);
    const auto at =
        std::chrono::system_clock::time_point(std::chrono::milliseconds(std::stoll(m[2])));
    const double seconds = std::chrono::duration<double>(at - published).count();
    std::printf("rank %d: generation 2 published -> its first step %.2f s\n", r, seconds);
    EXPECT_LT(seconds, kRegroupLimitSeconds) << "rank " << r;
  }
  // Every rank holds rank 0's parameters right after the regroup.
  const auto joined0 = accel::testing::ReadFile(dir_ + "/joined_0.bin");
  ASSERT_FALSE(joined0.empty());
  for (int r = 1; r < 6; ++r) {
    EXPECT_EQ(accel::testing::ReadFile(dir_ + "/joined_" + std::to_string(r) + ".bin"), joined0)
        << "rank " << r;
  }
  // The samples (the exact accounting of tests/faults/soak_check.py, instead of a reference
  // run): every step once, every sample of both epochs trained exactly once over all ranks.
  std::map<std::int64_t, std::multiset<std::int64_t>> trained;
  std::set<std::int64_t> steps;
  for (int r = 0; r < 6; ++r) {
    for (const auto& line :
         accel::testing::ReadLines(dir_ + "/record_race_" + std::to_string(r) + ".txt")) {
      std::istringstream in(line);
      std::int64_t epoch = 0, step = 0;
      in >> epoch >> step;
      steps.insert(step);
      for (std::int64_t i; in >> i;) trained[epoch].insert(i);
    }
  }
  ASSERT_EQ(trained.size(), static_cast<std::size_t>(kEpochs));
  for (const auto& [epoch, samples] : trained) {
    EXPECT_EQ(samples.size(), static_cast<std::size_t>(kSamples)) << "epoch " << epoch;
    for (std::int64_t i = 0; i < kSamples; ++i) {
      EXPECT_EQ(samples.count(i), 1u) << "epoch " << epoch << " sample " << i;
    }
  }
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(*steps.begin(), 1);
  EXPECT_EQ(static_cast<std::int64_t>(steps.size()), *steps.rbegin()) << "a step number missing";
}

}  // namespace
