// The main job end to end: train.bin alone and under accel-launch (real processes, Gloo on
// 127.0.0.1). Checks equivalence of DDP + accumulation with one big batch, resume after a kill,
// IDX input, and the errors for bad flags and unreadable data.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/exit_codes.h"
#include "tests/testing/launch_util.h"

namespace accel {
namespace {

const std::string kLauncher = ACCEL_LAUNCH_PATH;
const std::string kTrain = TRAIN_BIN_PATH;

struct Outcome {
  int exit_code;
  std::string output;  // stdout then stderr
};

// Runs `program` with the space-separated `args` (none of ours contain spaces).
Outcome RunProgram(const std::string& program, const std::string& args,
                   const std::function<void(pid_t)>& while_running = nullptr) {
  std::vector<std::string> argv = {program};
  for (absl::string_view arg : absl::StrSplit(args, ' ', absl::SkipEmpty())) {
    argv.emplace_back(arg);
  }
  testing::RunResult r = testing::RunCommand(argv, {}, absl::Seconds(120), while_running);
  return {r.exit_code, r.out + r.err};
}

// Returns the number after "key": in the last JSON line of `output`, or NaN.
double JsonNumber(const std::string& output, const std::string& key) {
  std::smatch match;
  std::regex pattern("\"" + key + "\": (-?[0-9.eE+-]+)");
  double value = std::nan("");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    value = std::stod((*it)[1]);
  }
  return value;
}

std::string TempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("accel_train_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

const char kSmall[] = "--input-dim 32 --hidden 64 --layers 3 --classes 4 --samples 512 --lr 0.01";

// Debian's pthreads OpenBLAS (installed, not selected, by scripts/install-deps) with two OpenMP
// threads: train.bin says why CPU training may crawl; with the selected OpenMP build it says
// nothing.
TEST(Train, PthreadsOpenBlasWithSeveralThreadsIsNamedOnce) {
  const std::string pthreads_dir = "/usr/lib/x86_64-linux-gnu/openblas-pthread";
  ASSERT_TRUE(std::filesystem::exists(pthreads_dir + "/libopenblas.so.0"))
      << "scripts/install-deps installs libopenblas0-pthread";
  const std::vector<std::string> argv = {kTrain,      "--input-dim", "32",      "--hidden", "64",
                                         "--samples", "256",         "--steps", "3"};
  testing::RunResult slow = testing::RunCommand(
      argv, {"LD_LIBRARY_PATH=" + pthreads_dir, "OMP_NUM_THREADS=2"}, absl::Seconds(60));
  ASSERT_EQ(slow.exit_code, kExitOk) << slow.out << slow.err;
  const std::string notice = "OpenBLAS here is its pthreads build";
  EXPECT_NE(slow.err.find(notice), std::string::npos) << slow.err;
  EXPECT_EQ(slow.err.find(notice), slow.err.rfind(notice)) << "once\n" << slow.err;

  testing::RunResult shared = testing::RunCommand(argv, {"OMP_NUM_THREADS=2"}, absl::Seconds(60));
  ASSERT_EQ(shared.exit_code, kExitOk) << shared.out << shared.err;
  EXPECT_EQ(shared.err.find(notice), std::string::npos)
      << "the selected BLAS (scripts/install-deps: the OpenMP build) needs no notice\n"
      << shared.err;
}

TEST(Train, DefaultConfigTrainsAndLossFallsByHalf) {
  Outcome run =
      RunProgram(kLauncher, "--config_file " ACCEL_SOURCE_DIR "/configs/default_config.yaml " +
                                kTrain + " " + kSmall + " --steps 150");
  ASSERT_EQ(run.exit_code, kExitOk) << run.output;
  EXPECT_NE(run.output.find("fp16"), std::string::npos) << "the fp16 → fp32 notice\n" << run.output;
  double first = JsonNumber(run.output, "first_loss");
  double last = JsonNumber(run.output, "loss");
  EXPECT_LT(last, first / 2) << run.output;
  EXPECT_EQ(JsonNumber(run.output, "world"), 1);
}

TEST(Train, TwoProcessesTimesAccumulationTwoEqualsOneProcessWithFourTimesTheBatch) {
  Outcome ddp = RunProgram(
      kLauncher, "--use_cpu --num_processes 2 --gradient_accumulation_steps 2 " + kTrain + " " +
                     kSmall + " --batch-size 4 --steps 20 --optimizer sgd");
  ASSERT_EQ(ddp.exit_code, kExitOk) << ddp.output;
  Outcome single = RunProgram(
      kTrain, std::string(kSmall) + " --batch-size 16 --steps 20 --optimizer sgd --grad-accum 1");
  ASSERT_EQ(single.exit_code, kExitOk) << single.output;
  EXPECT_EQ(JsonNumber(ddp.output, "world"), 2);
  EXPECT_EQ(JsonNumber(ddp.output, "grad_accum"), 2);
  double a = JsonNumber(ddp.output, "param_checksum");
  double b = JsonNumber(single.output, "param_checksum");
  ASSERT_FALSE(std::isnan(a)) << ddp.output;
  EXPECT_NEAR(a, b, 1e-5 * std::abs(b)) << ddp.output << "\n" << single.output;
}

// --step-times: a start line (when main() began), one line per completed optimizer step (none for
// a micro-step) per process, with the world, the process's rank and a wall-clock time taken while
// the run ran, in order; then a final line with the process's parameter checksum, the same on
// every rank.
TEST(Train, StepTimesHaveOneLinePerCompletedStepOfEveryProcess) {
  const std::string dir = TempDir("step_times");
  const double before =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  Outcome ddp = RunProgram(
      kLauncher, "--use_cpu --num_processes 2 --gradient_accumulation_steps 2 " + kTrain + " " +
                     kSmall + " --batch-size 4 --steps 7" + " --step-times " + dir + "/times");
  ASSERT_EQ(ddp.exit_code, kExitOk) << ddp.output;
  const double after =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::regex line(R"(step (\d+) world (\d+) rank (\d+) time ([0-9.]+))");
  const std::regex final_line(
      R"(final 7 world 2 rank (\d+) time ([0-9.]+) param_checksum ([-0-9.e+]+))");
  const std::regex start_line(R"(start 0 world 2 rank (\d+) time ([0-9.]+))");
  std::vector<std::string> checksums;
  for (int rank = 0; rank < 2; ++rank) {
    std::ifstream in(dir + "/times." + std::to_string(rank));
    ASSERT_TRUE(in) << "no step-times file for rank " << rank;
    std::string text;
    int step = 0;
    double last = before;
    std::smatch m;
    ASSERT_TRUE(std::getline(in, text) && std::regex_match(text, m, start_line)) << text;
    EXPECT_EQ(std::stoi(m[1]), rank) << text;
    EXPECT_GE(std::stod(m[2]), before) << text;
    last = std::stod(m[2]);
    while (std::getline(in, text)) {
      if (std::regex_match(text, m, final_line)) {
        EXPECT_EQ(std::stoi(m[1]), rank) << text;
        EXPECT_EQ(step, 7) << "the final line comes after the last step: " << text;
        checksums.push_back(m[3]);
        continue;
      }
      ASSERT_TRUE(std::regex_match(text, m, line)) << text;
      EXPECT_EQ(std::stoi(m[1]), ++step) << text;
      EXPECT_EQ(std::stoi(m[2]), 2) << text;
      EXPECT_EQ(std::stoi(m[3]), rank) << text;
      const double t = std::stod(m[4]);
      EXPECT_GE(t, last) << text;
      EXPECT_LE(t, after) << text;
      last = t;
    }
    EXPECT_EQ(step, 7) << "rank " << rank;
  }
  ASSERT_EQ(checksums.size(), 2u) << "a final line per rank";
  EXPECT_EQ(checksums[0], checksums[1]) << "replicated parameters";
  std::filesystem::remove_all(dir);
}

TEST(Train, ResumeAfterKillMatchesAnUninterruptedRun) {
  const std::string dir = TempDir("resume");
  const std::string args = std::string(kSmall) + " --steps 400 --save-every 10 --checkpoint-dir ";
  Outcome whole = RunProgram(kTrain, args + dir + "/whole");
  ASSERT_EQ(whole.exit_code, kExitOk) << whole.output;

  // Start the same run, SIGKILL it once a checkpoint exists, then resume it.
  const std::string ckpt = dir + "/killed";
  Outcome killed = RunProgram(kTrain, args + ckpt, [&](pid_t pid) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!std::filesystem::exists(ckpt) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::kill(pid, SIGKILL);
  });
  ASSERT_EQ(killed.exit_code, ExitCodeForSignal(SIGKILL))
      << "the run finished before it could be killed";
  ASSERT_TRUE(std::filesystem::exists(ckpt));

  Outcome resumed = RunProgram(kTrain, args + ckpt + " --resume");
  ASSERT_EQ(resumed.exit_code, kExitOk) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from"), std::string::npos) << resumed.output;
  EXPECT_EQ(JsonNumber(resumed.output, "steps"), 400);
  EXPECT_EQ(JsonNumber(resumed.output, "param_checksum"),
            JsonNumber(whole.output, "param_checksum"))
      << resumed.output << "\n"
      << whole.output;
  std::filesystem::remove_all(dir);
}

// A crash between save_state's two renames leaves only "<dir>.old": --resume must take it (not
// start over), and the next save must keep it until the new checkpoint is complete.
TEST(Train, ResumeTakesTheOldCheckpointWhenACrashLeftOnlyThat) {
  const std::string dir = TempDir("old_only");
  const std::string args = std::string(kSmall) + " --save-every 20 --checkpoint-dir ";
  Outcome whole = RunProgram(kTrain, args + dir + "/whole --steps 60");
  ASSERT_EQ(whole.exit_code, kExitOk) << whole.output;
  const std::string ckpt = dir + "/ckpt";
  Outcome first = RunProgram(kTrain, args + ckpt + " --steps 40");
  ASSERT_EQ(first.exit_code, kExitOk) << first.output;
  std::filesystem::rename(ckpt, ckpt + ".old");  // what a crash between the renames leaves

  Outcome resumed = RunProgram(kTrain, args + ckpt + " --steps 60 --resume");
  ASSERT_EQ(resumed.exit_code, kExitOk) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from " + ckpt + " at step 40"), std::string::npos)
      << resumed.output;
  EXPECT_EQ(JsonNumber(resumed.output, "param_checksum"),
            JsonNumber(whole.output, "param_checksum"))
      << resumed.output << "\n"
      << whole.output;
  EXPECT_TRUE(std::filesystem::exists(ckpt + "/accelerator.pt"));
  EXPECT_FALSE(std::filesystem::exists(ckpt + ".old"));
  EXPECT_FALSE(std::filesystem::exists(ckpt + ".tmp"));
  std::filesystem::remove_all(dir);
}

// kill -9 at a random moment while train.bin saves a checkpoint after every step: the last good
// state survives (in "<dir>" or "<dir>.old") and the resumed run ends exactly where an
// uninterrupted one does. ACCEL_CHECKPOINT_TRIALS trials (default 3; 20 by hand).
TEST(Train, KillDuringCheckpointingResumesFromTheLastGoodState) {
  const char* env_trials = std::getenv("ACCEL_CHECKPOINT_TRIALS");
  const int trials = env_trials != nullptr ? std::atoi(env_trials) : 3;
  const std::string dir = TempDir("kill_ckpt");
  const std::string args = std::string(kSmall) + " --steps 60 --save-every 1 --checkpoint-dir ";
  Outcome whole = RunProgram(kTrain, args + dir + "/whole");
  ASSERT_EQ(whole.exit_code, kExitOk) << whole.output;
  std::mt19937 random(static_cast<unsigned>(::getpid()));
  int resumed_trials = 0;
  std::map<std::string, int> states;  // what each kill left on disk
  for (int trial = 0; trial < trials; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const std::string ckpt = dir + "/trial_" + std::to_string(trial);
    const int delay_ms = static_cast<int>(random() % 400);
    Outcome killed = RunProgram(kTrain, args + ckpt, [&](pid_t pid) {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!std::filesystem::exists(ckpt) && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      ::kill(pid, SIGKILL);
    });
    if (killed.exit_code == kExitOk) continue;  // it finished first: nothing to resume
    ASSERT_EQ(killed.exit_code, ExitCodeForSignal(SIGKILL)) << killed.output;
    EXPECT_TRUE(std::filesystem::exists(ckpt + "/accelerator.pt") ||
                std::filesystem::exists(ckpt + ".old/accelerator.pt"))
        << "killed " << delay_ms << " ms after the first checkpoint: no checkpoint is left";
    // Where the kill landed, by what it left: "dir", "dir+old", "old" (between the renames),
    // each "+tmp" when a save was in progress.
    std::string left = std::filesystem::exists(ckpt) ? "dir" : "";
    if (std::filesystem::exists(ckpt + ".old")) left += left.empty() ? "old" : "+old";
    if (std::filesystem::exists(ckpt + ".tmp")) left += "+tmp";
    ++states[left];
    Outcome resumed = RunProgram(kTrain, args + ckpt + " --resume");
    ASSERT_EQ(resumed.exit_code, kExitOk) << resumed.output;
    EXPECT_NE(resumed.output.find("resumed from"), std::string::npos) << resumed.output;
    EXPECT_EQ(JsonNumber(resumed.output, "param_checksum"),
              JsonNumber(whole.output, "param_checksum"))
        << "killed " << delay_ms << " ms after the first checkpoint\n"
        << resumed.output;
    ++resumed_trials;
  }
  std::printf("%d of %d trials killed mid-run and resumed; left on disk:", resumed_trials, trials);
  for (const auto& [left, count] : states) std::printf(" %s %d", left.c_str(), count);
  std::printf("\n");
  EXPECT_GT(resumed_trials, 0) << "every run finished before it was killed";
  std::filesystem::remove_all(dir);
}

void WriteIdx(const std::string& images, const std::string& labels, int count) {
  auto be32 = [](std::ofstream& out, std::uint32_t v) {
    const char bytes[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                           static_cast<char>(v >> 8), static_cast<char>(v)};
    out.write(bytes, 4);
  };
  std::ofstream img(images, std::ios::binary), lab(labels, std::ios::binary);
  be32(img, 0x803), be32(img, count), be32(img, 8), be32(img, 8);
  be32(lab, 0x801), be32(lab, count);
  for (int i = 0; i < count; ++i) {
    const int label = i % 2;  // bright top half = 1, bright bottom half = 0
    for (int p = 0; p < 64; ++p) img.put(static_cast<char>(((p < 32) == (label == 1)) ? 200 : 20));
    lab.put(static_cast<char>(label));
  }
}

TEST(Train, ReadsIdxDataAndTrainsTheCnn) {
  const std::string dir = TempDir("idx");
  WriteIdx(dir + "/tiny-images-idx3-ubyte", dir + "/tiny-labels-idx1-ubyte", 64);
  Outcome run =
      RunProgram(kTrain, "--data " + dir + "/tiny-images-idx3-ubyte --model cnn" +
                             " --hidden 16 --classes 2 --batch-size 8 --steps 30 --lr 0.01");
  ASSERT_EQ(run.exit_code, kExitOk) << run.output;
  EXPECT_LT(JsonNumber(run.output, "loss"), 0.1) << run.output;
  std::filesystem::remove_all(dir);
}

TEST(Train, BadFlagsAndUnreadableDataAreUsageErrorsWithAClearMessage) {
  Outcome bad = RunProgram(kTrain, "--batch-size zero --frobnicate");
  EXPECT_EQ(bad.exit_code, kExitUsage);
  EXPECT_NE(bad.output.find("train.bin: bad value 'zero' for --batch-size"), std::string::npos)
      << bad.output;
  EXPECT_NE(bad.output.find("train.bin: unknown flag --frobnicate"), std::string::npos);

  Outcome missing = RunProgram(kTrain, "--data /nonexistent/train-images-idx3-ubyte");
  EXPECT_EQ(missing.exit_code, kExitUsage) << missing.output;
  EXPECT_NE(
      missing.output.find(
          "train.bin: read IDX /nonexistent/train-images-idx3-ubyte: No such file or directory"),
      std::string::npos)
      << missing.output;
}

}  // namespace
}  // namespace accel
