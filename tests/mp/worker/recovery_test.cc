// In-place recovery of libaccel (issue 25, part 2), without the launcher: 3 "machines" x 2 ranks
// of worker_elastic_rank on this host (shared memory inside a machine, Gloo among machines),
// this test playing the elastic launcher through the generation files. Machine 2's ranks kill
// themselves mid-step; machines 0-1 must go on in the same processes at world 4 and end with
// the parameters of a reference that saved a checkpoint at the same step at world 6 and
// resumed it at world 4, having trained on exactly the same samples: every sample of every
// epoch once.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
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

constexpr int kPerMachine = 2;
constexpr std::int64_t kSamples = 240;  // worker_elastic_rank.cc's set
constexpr int kEpochs = 2;
const auto kDeadline = std::chrono::seconds(240);
// Issue 25's goal for in-place recovery after kill -9 (p99, from the kill to the first step at the
// new world), and the margin one run on a shared host gets: 0.22-0.24 s measured here at load 18;
// a survivor that sat out the 10 s collective deadline on a gone peer exceeds it by far.
constexpr double kRecoveryGoalSeconds = 2.0;
constexpr double kRecoveryMarginSeconds = 1.0;

std::vector<float> ReadParams(const std::string& path) {
  const std::string bytes = accel::testing::ReadFile(path);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

// ||a - b|| / ||b||.
double RelDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

// "epoch step i j k ..." -> epoch, step, indices.
struct StepRecord {
  std::int64_t epoch = 0;
  std::int64_t step = 0;
  std::vector<std::int64_t> indices;
};
StepRecord ParseRecord(const std::string& line) {
  StepRecord r;
  std::istringstream in(line);
  in >> r.epoch >> r.step;
  for (std::int64_t i; in >> i;) r.indices.push_back(i);
  return r;
}

class WorkerRecoveryTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    dir_ = accel::testing::MakeTempDir("accel_recovery");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Ranks `first`.. of `world` (count < 0: the rest).
  std::vector<RankRun> Run(int world, const std::string& tag, const std::string& mode, int step,
                           const std::string& die, int first = 0, int count = -1) {
    return RunRanks(ACCEL_WORKER_ELASTIC_RANK, world, kPerMachine,
                    {dir_, tag, mode, std::to_string(step), dir_ + "/ckpt", die},
                    {{"ACCELERATE_GRADIENT_ACCUMULATION_STEPS", std::to_string(GetParam())}}, dir_,
                    tag, kDeadline, first, count);
  }

  void WriteGeneration(int machine, const Generation& g) {
    std::string error;
    ASSERT_TRUE(
        accel::worker::WriteGeneration(dir_ + "/gen_m" + std::to_string(machine), g, &error))
        << error;
  }

  static Generation MakeGeneration(std::int64_t number, int machines, int machine,
                                   bool joining = false) {
    return accel::testing::MakeGeneration(number, machines, machine, kPerMachine, joining);
  }

  std::string Record(const std::string& tag, int rank) {
    return dir_ + "/record_" + tag + "_" + std::to_string(rank) + ".txt";
  }

  std::string dir_;
};

TEST_P(WorkerRecoveryTest, ScaleDownInPlaceEqualsCheckpointResumedAtTheSmallerWorld) {
  const int accumulation = GetParam();
  const int kill_step = accumulation == 1 ? 3 : 2;  // completed steps when machine 2 dies

  // The reference: world 6 to kill_step, a checkpoint, then world 4 from it.
  auto saved = Run(6, "ref6", "save", kill_step, "-");
  for (std::size_t r = 0; r < saved.size(); ++r) {
    ASSERT_EQ(saved[r].exit_code, accel::kExitOk) << "ref6 rank " << r << ":\n" << saved[r].output;
  }
  auto resumed = Run(4, "ref4", "load", 0, "-");
  for (std::size_t r = 0; r < resumed.size(); ++r) {
    ASSERT_EQ(resumed[r].exit_code, accel::kExitOk) << "ref4 rank " << r << ":\n"
                                                    << resumed[r].output;
  }

  // In place: generation 0 is 3 machines; when machine 2's ranks are dead, generation 1 is
  // machines 0-1, in a new store namespace, as the elastic launcher publishes it.
  for (int m = 0; m < 3; ++m) WriteGeneration(m, MakeGeneration(0, 3, m));
  std::vector<RankRun> elastic;
  std::thread ranks([&] { elastic = Run(6, "elastic", "full", kill_step, "4,5"); });
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  bool dead = false;
  while (!dead && std::chrono::steady_clock::now() < end) {
    dead = fs::exists(dir_ + "/dead_4") && fs::exists(dir_ + "/dead_5");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto noticed = std::chrono::system_clock::now();
  if (dead) {
    for (int m = 0; m < 2; ++m) WriteGeneration(m, MakeGeneration(1, 2, m));
  }
  ranks.join();
  ASSERT_TRUE(dead) << "machine 2's ranks never reached step " << kill_step;

  // Machine 2's processes are gone; machines 0-1 finished in the processes that started at
  // world 6, now at world 4.
  for (int r = 4; r < 6; ++r) EXPECT_NE(elastic[r].exit_code, accel::kExitOk);
  const std::regex start_line("start pid (\\d+) rank (\\d) world 6");
  const std::regex end_line("end pid (\\d+) rank (\\d) world 4 steps \\d+ generation 1");
  for (int r = 0; r < 4; ++r) {
    ASSERT_EQ(elastic[r].exit_code, accel::kExitOk) << "rank " << r << ":\n" << elastic[r].output;
    std::smatch first, last;
    ASSERT_TRUE(std::regex_search(elastic[r].output, first, start_line)) << elastic[r].output;
    ASSERT_TRUE(std::regex_search(elastic[r].output, last, end_line)) << elastic[r].output;
    EXPECT_EQ(first[1], last[1]) << "rank " << r << " is not the same process";
    EXPECT_EQ(first[2], last[2]) << "rank " << r << " changed rank";
  }
  // Every survivor's first step at world 4 is the one after the kill step (none lost, none twice)
  // and came within the recovery goal plus the margin of the loss (so no survivor sat out a Gloo
  // call on a peer that was gone or had moved on).
  const std::regex recovered_line("recovered step (\\d+) at unix ms (\\d+)");
  double slowest = 0;
  for (int r = 0; r < 4; ++r) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(elastic[r].output, m, recovered_line)) << elastic[r].output;
    EXPECT_EQ(std::stoll(m[1]), kill_step + 1) << "rank " << r;
    const auto at =
        std::chrono::system_clock::time_point(std::chrono::milliseconds(std::stoll(m[2])));
    slowest = std::max(slowest, std::chrono::duration<double>(at - noticed).count());
  }
  std::printf("loss noticed -> every survivor's first step at world 4: %.2f s\n", slowest);
  EXPECT_LT(slowest, kRecoveryGoalSeconds + kRecoveryMarginSeconds);
  if (const auto at = elastic[0].output.find("[accel] generation 1"); at != std::string::npos) {
    std::printf("%s\n",
                elastic[0].output.substr(at, elastic[0].output.find('\n', at) - at).c_str());
  }

  // The same parameters as the checkpoint resumed at world 4.
  const auto got = ReadParams(dir_ + "/params_elastic.bin");
  const auto want = ReadParams(dir_ + "/params_ref4.bin");
  ASSERT_FALSE(want.empty());
  ASSERT_EQ(got.size(), want.size());
  const double rel = RelDiff(got, want);
  std::printf("accumulation %d: in place vs checkpoint resumed at world 4: rel diff %.3g\n",
              accumulation, rel);
  EXPECT_LT(rel, 1e-6);

  // The same samples, step by step: each surviving rank's record is the reference's (world 6
  // up to the kill, world 4 after); machine 2's ends at the kill.
  for (int r = 0; r < 6; ++r) {
    std::vector<std::string> want_lines = accel::testing::ReadLines(Record("ref6", r));
    if (r < 4) {
      const auto after = accel::testing::ReadLines(Record("ref4", r));
      want_lines.insert(want_lines.end(), after.begin(), after.end());
    }
    EXPECT_EQ(accel::testing::ReadLines(Record("elastic", r)), want_lines) << "rank " << r;
  }

  // And the sampler's record: every sample of every epoch trained exactly once.
  std::map<std::int64_t, std::multiset<std::int64_t>> trained;
  std::set<std::int64_t> steps;
  for (int r = 0; r < 6; ++r) {
    for (const auto& line : accel::testing::ReadLines(Record("elastic", r))) {
      StepRecord rec = ParseRecord(line);
      steps.insert(rec.step);
      trained[rec.epoch].insert(rec.indices.begin(), rec.indices.end());
    }
  }
  ASSERT_EQ(trained.size(), static_cast<std::size_t>(kEpochs));
  for (const auto& [epoch, samples] : trained) {
    EXPECT_EQ(samples.size(), static_cast<std::size_t>(kSamples)) << "epoch " << epoch;
    for (std::int64_t i = 0; i < kSamples; ++i) {
      EXPECT_EQ(samples.count(i), 1u) << "epoch " << epoch << " sample " << i;
    }
  }
  EXPECT_EQ(*steps.begin(), 1);
  EXPECT_EQ(static_cast<std::int64_t>(steps.size()), *steps.rbegin()) << "a step number missing";
}

// Scale-up in place: machines 0-1 train at world 4 and wait after step K; the test publishes
// generation 1 (machines 0-2) and starts machine 2's ranks, whose generation file says
// `joining`. They receive the whole state from the running ranks: right after joining every
// rank holds the same parameters bit for bit; machines 0-1 go on in the same processes; the
// end equals a checkpoint saved at step K at world 4 and resumed at world 6, sample by sample.
TEST_P(WorkerRecoveryTest, ScaleUpInPlaceEqualsCheckpointResumedAtTheLargerWorld) {
  const int accumulation = GetParam();
  const int join_step = accumulation == 1 ? 5 : 3;

  auto saved = Run(4, "ref4", "save", join_step, "-");
  for (std::size_t r = 0; r < saved.size(); ++r) {
    ASSERT_EQ(saved[r].exit_code, accel::kExitOk) << "ref4 rank " << r << ":\n" << saved[r].output;
  }
  auto resumed = Run(6, "ref6", "load", 0, "-");
  for (std::size_t r = 0; r < resumed.size(); ++r) {
    ASSERT_EQ(resumed[r].exit_code, accel::kExitOk) << "ref6 rank " << r << ":\n"
                                                    << resumed[r].output;
  }

  for (int m = 0; m < 2; ++m) WriteGeneration(m, MakeGeneration(0, 2, m));
  std::vector<RankRun> first, joiners;
  std::thread ranks([&] { first = Run(4, "grow", "grow", join_step, "-"); });
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  bool waiting = false;
  while (!waiting && std::chrono::steady_clock::now() < end) {
    waiting = true;
    for (int r = 0; r < 4; ++r)
      waiting = waiting && fs::exists(dir_ + "/waiting_" + std::to_string(r));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto published = std::chrono::system_clock::now();
  if (waiting) {
    WriteGeneration(2, MakeGeneration(1, 3, 2, /*joining=*/true));
    for (int m = 0; m < 2; ++m) WriteGeneration(m, MakeGeneration(1, 3, m));
    joiners = Run(6, "grow", "grow", join_step, "-", 4, 2);
  }
  ranks.join();
  ASSERT_TRUE(waiting) << "machines 0-1 never reached step " << join_step;

  const std::regex start_line("start pid (\\d+) rank (\\d) world (\\d)");
  const std::regex end_line("end pid (\\d+) rank (\\d) world 6 steps \\d+ generation 1");
  for (int r = 0; r < 6; ++r) {
    const RankRun& run = r < 4 ? first[r] : joiners[r - 4];
    ASSERT_EQ(run.exit_code, accel::kExitOk) << "rank " << r << ":\n" << run.output;
    std::smatch a, b;
    ASSERT_TRUE(std::regex_search(run.output, a, start_line)) << run.output;
    ASSERT_TRUE(std::regex_search(run.output, b, end_line)) << run.output;
    EXPECT_EQ(a[1], b[1]) << "rank " << r << " is not the same process";
    EXPECT_EQ(a[3], r < 4 ? "4" : "6") << "rank " << r << " started in the wrong world";
  }
  // Right after joining: every rank's parameters are rank 0's, bit for bit.
  const auto joined0 = accel::testing::ReadFile(dir_ + "/joined_0.bin");
  ASSERT_FALSE(joined0.empty());
  for (int r = 1; r < 6; ++r) {
    EXPECT_EQ(accel::testing::ReadFile(dir_ + "/joined_" + std::to_string(r) + ".bin"), joined0)
        << "rank " << r;
  }
  // The joiners' first step: how long after the generation was published.
  const std::regex recovered_line("recovered step (\\d+) at unix ms (\\d+)");
  for (int r = 4; r < 6; ++r) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(joiners[r - 4].output, m, recovered_line));
    EXPECT_EQ(std::stoll(m[1]), join_step + 1);
    const auto at =
        std::chrono::system_clock::time_point(std::chrono::milliseconds(std::stoll(m[2])));
    std::printf("rank %d: generation published -> its first step %.2f s\n", r,
                std::chrono::duration<double>(at - published).count());
  }

  const auto got = ReadParams(dir_ + "/params_grow.bin");
  const auto want = ReadParams(dir_ + "/params_ref6.bin");
  ASSERT_FALSE(want.empty());
  ASSERT_EQ(got.size(), want.size());
  const double rel = RelDiff(got, want);
  std::printf("accumulation %d: scale-up in place vs checkpoint resumed at world 6: rel %.3g\n",
              accumulation, rel);
  EXPECT_LT(rel, 1e-6);
  for (int r = 0; r < 6; ++r) {
    std::vector<std::string> want_lines;
    if (r < 4) want_lines = accel::testing::ReadLines(Record("ref4", r));
    const auto after = accel::testing::ReadLines(Record("ref6", r));
    want_lines.insert(want_lines.end(), after.begin(), after.end());
    EXPECT_EQ(accel::testing::ReadLines(Record("grow", r)), want_lines) << "rank " << r;
  }
}

// Issue 35: recover() waits the generation file's recover_timeout_ms (accel-launch writes its
// rdzv_timeout and a margin: as long as the rendezvous waits for a replacement), not the connect
// deadline (worker_elastic_rank's 60 s, libaccel's default 300 s). Machine 1 of 2 dies and no next
// generation comes: with 3 s, the survivors give up about 3 s after their step failed and say so.
// Where the timeout comes from does not depend on the accumulation: one run (accumulation 1; 11 s
// of CI each).
class RecoverTimeoutTest : public WorkerRecoveryTest {};
TEST_P(RecoverTimeoutTest, RecoverWaitsTheRecoverTimeoutNotTheConnectTimeout) {
  for (int m = 0; m < 2; ++m) {
    Generation g = MakeGeneration(0, 2, m);
    g.recover_timeout_ms = 3000;
    WriteGeneration(m, g);
  }
  std::vector<RankRun> runs;
  std::thread ranks([&] {
    runs = RunRanks(ACCEL_WORKER_ELASTIC_RANK, 4, kPerMachine,
                    {dir_, "wait", "full", "2", dir_ + "/ckpt", "2,3"},
                    {{"ACCELERATE_GRADIENT_ACCUMULATION_STEPS", std::to_string(GetParam())}}, dir_,
                    "wait", kDeadline);
  });
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  while (!(fs::exists(dir_ + "/dead_2") && fs::exists(dir_ + "/dead_3")) &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto died = std::chrono::steady_clock::now();
  ranks.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - died).count();
  ASSERT_EQ(runs.size(), 4u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(runs[r].exit_code, accel::kExitWorkerFailed) << runs[r].output;
    EXPECT_NE(
        runs[r].output.find("no generation after 0 within 3000 ms (the rendezvous's rdzv_timeout"),
        std::string::npos)
        << runs[r].output;
  }
  std::printf("machine 1 died -> the survivors gave up: %.2f s\n", seconds);
  // The step fails at once (a dead peer's socket closes) or at the 10 s collective deadline,
  // then 3 s: well before the 60 s connect deadline that bounded the wait before.
  EXPECT_LT(seconds, 40.0);
}

std::string AccumulationName(const ::testing::TestParamInfo<int>& p) {
  return "Accumulation" + std::to_string(p.param);
}
INSTANTIATE_TEST_SUITE_P(Elastic, WorkerRecoveryTest, ::testing::Values(1, 2), AccumulationName);
INSTANTIATE_TEST_SUITE_P(Elastic, RecoverTimeoutTest, ::testing::Values(1), AccumulationName);

}  // namespace
