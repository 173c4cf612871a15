// libaccel multi-process tests on 127.0.0.1: spawns worker_mp_rank once per rank with the env
// contract (RANK, WORLD_SIZE, ACCEL_STORE_ENDPOINT=file://<tmp>/store, ...) or under mpirun, waits
// with a deadline, then compares what rank 0 wrote. No LibTorch here: parameters are raw float32.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/exit_codes.h"
#include "rendezvous/grpc/server.h"
#include "tests/testing/files.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct RankResult {
  int exit_code = -1;  // ExitCodeFromWaitStatus; -1 when killed at the deadline
  std::string output;
};

class WorkerMpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = accel::testing::MakeTempDir("accel_worker_mp");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Runs `world` ranks of worker_mp_rank with `args`; returns each rank's exit code and output.
  std::vector<RankResult> RunRanks(int world, const std::vector<std::string>& args,
                                   std::map<std::string, std::string> extra_env = {},
                                   std::chrono::seconds deadline = std::chrono::seconds(240)) {
    static int run = 0;
    const std::string run_id = "run" + std::to_string(++run);
    std::vector<pid_t> pids;
    std::vector<std::string> logs;
    for (int r = 0; r < world; ++r) {
      // ranks_per_machine_ > 0: consecutive ranks play machines (GROUP_RANK), as the launcher
      // numbers them, so the shared-memory communicator goes hierarchical.
      const int per_machine = ranks_per_machine_ > 0 ? ranks_per_machine_ : world;
      std::map<std::string, std::string> env = {
          {"RANK", std::to_string(r)},
          {"LOCAL_RANK", std::to_string(r % per_machine)},
          {"WORLD_SIZE", std::to_string(world)},
          {"LOCAL_WORLD_SIZE", std::to_string(per_machine)},
          {"GROUP_RANK", std::to_string(r / per_machine)},
          {"MASTER_ADDR", "127.0.0.1"},
          {"ACCEL_STORE_ENDPOINT", "file://" + dir_ + "/store"},
          {"TORCHELASTIC_RUN_ID", run_id},
          {"OMP_NUM_THREADS", "1"},
          {"ACCELERATE_USE_CPU", "true"},
      };
      for (const auto& [k, v] : extra_env)
        env[k] = (k == "ACCEL_PROGRESS_FILE" && r != 0) ? v + std::to_string(r) : v;
      std::vector<std::string> argv = {kRankBinary};
      argv.insert(argv.end(), args.begin(), args.end());
      logs.push_back(dir_ + "/" + run_id + "_rank" + std::to_string(r) + ".log");
      pids.push_back(Spawn(argv, env, logs.back()));
    }
    return Wait(pids, logs, deadline);
  }

  pid_t Spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
              const std::string& log) {
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string kv = *e;
      const std::string key = kv.substr(0, kv.find('='));
      if (env.count(key) == 0 && key != "RANK" && key.rfind("OMPI_", 0) != 0)
        env_strings.push_back(kv);
    }
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    std::vector<char*> cargv, cenv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    for (const auto& e : env_strings) cenv.push_back(const_cast<char*>(e.c_str()));
    cenv.push_back(nullptr);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execve(cargv[0], cargv.data(), cenv.data());
      ::_exit(accel::kExitExecFailed);
    }
    ::close(fd);
    return pid;
  }

  std::vector<RankResult> Wait(const std::vector<pid_t>& pids, const std::vector<std::string>& logs,
                               std::chrono::seconds deadline) {
    std::vector<RankResult> results(pids.size());
    std::vector<bool> done(pids.size(), false);
    const auto end = Clock::now() + deadline;
    size_t remaining = pids.size();
    while (remaining > 0) {
      for (size_t i = 0; i < pids.size(); ++i) {
        if (done[i]) continue;
        int status = 0;
        if (::waitpid(pids[i], &status, WNOHANG) == pids[i]) {
          done[i] = true;
          --remaining;
          results[i].exit_code = accel::ExitCodeFromWaitStatus(status);
        }
      }
      if (remaining == 0) break;
      if (Clock::now() > end) {
        ADD_FAILURE() << "ranks still running after " << deadline.count() << " s: killing them";
        for (size_t i = 0; i < pids.size(); ++i) {
          if (done[i]) continue;
          ::kill(-pids[i], SIGKILL);
          ::waitpid(pids[i], nullptr, 0);
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (size_t i = 0; i < pids.size(); ++i) {
      std::ifstream in(logs[i]);
      results[i].output.assign(std::istreambuf_iterator<char>(in), {});
    }
    return results;
  }

  static void ExpectAllSucceeded(const std::vector<RankResult>& results) {
    for (size_t r = 0; r < results.size(); ++r) {
      EXPECT_EQ(results[r].exit_code, accel::kExitOk) << "rank " << r << " output:\n"
                                                      << results[r].output;
    }
  }

  std::vector<float> ReadParams(const std::string& tag) {
    std::ifstream in(dir_ + "/params_" + tag + ".bin", std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
    std::vector<float> out(bytes.size() / sizeof(float));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
    return out;
  }

  // ||a - b|| / ||b||.
  static double RelDiff(const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
      den += static_cast<double>(b[i]) * b[i];
    }
    return std::sqrt(num / den);
  }

  // The reference: one process, batch 16, no accumulation (with `env`, e.g. the precision).
  std::vector<float> Reference(std::map<std::string, std::string> env = {}) {
    env["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"] = "1";
    const int per_machine = ranks_per_machine_;
    ranks_per_machine_ = 0;
    auto results = RunRanks(1, {"train", dir_, "ref", "16"}, env);
    ranks_per_machine_ = per_machine;
    ExpectAllSucceeded(results);
    return ReadParams("ref");
  }

  // `backend`: the communicator rank 0 must report ("shm" by default: the ranks share this
  // machine). `extra_env` goes to every rank.
  void ExpectEquivalent(int world, int accumulation, int micro, const std::string& backend = "shm",
                        std::map<std::string, std::string> extra_env = {},
                        double tolerance = 1e-5) {
    const std::vector<float> ref = Reference(extra_env);
    ASSERT_FALSE(ref.empty());
    const std::string tag = "w" + std::to_string(world) + "a" + std::to_string(accumulation);
    extra_env["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"] = std::to_string(accumulation);
    extra_env["ACCEL_PROGRESS_FILE"] = dir_ + "/progress" + tag;
    const auto start = Clock::now();
    auto results = RunRanks(world, {"train", dir_, tag, std::to_string(micro)}, extra_env);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    ExpectAllSucceeded(results);
    EXPECT_NE(results[0].output.find("backend " + backend + "\n"), std::string::npos)
        << results[0].output;
    const std::vector<float> got = ReadParams(tag);
    ASSERT_EQ(got.size(), ref.size());
    const double rel = RelDiff(got, ref);
    std::printf(
        "world %d x accumulation %d x micro-batch %d (%s) vs world 1 x batch 16: rel diff %.3g, "
        "%.1f s for 20 steps\n",
        world, accumulation, micro, backend.c_str(), rel, seconds);
    EXPECT_LT(rel, tolerance);
    // 4 ranks on 2 cores must not stall (no busy-polling collectives).
    EXPECT_LT(seconds, 90.0);
  }

  std::string dir_;
  int ranks_per_machine_ = 0;  // 0: every rank on one machine
  static inline const std::string kRankBinary = ACCEL_WORKER_MP_RANK;
};

// Asserts that every rank succeeded and rank 0 reported `backend`.
void ExpectBackend(const std::vector<RankResult>& results, const std::string& backend) {
  ASSERT_FALSE(results.empty());
  EXPECT_NE(results[0].output.find("backend " + backend + "\n"), std::string::npos)
      << results[0].output;
}

TEST_F(WorkerMpTest, CollectivesExactWorld2) {
  auto results = RunRanks(2, {"collectives", dir_});
  ExpectAllSucceeded(results);
  ExpectBackend(results, "shm");  // ranks of one machine: shared memory by default
}

TEST_F(WorkerMpTest, CollectivesExactWorld2Gloo) {
  auto results = RunRanks(2, {"collectives", dir_}, {{"ACCEL_SHM", "off"}});
  ExpectAllSucceeded(results);
  ExpectBackend(results, "gloo");
}

TEST_F(WorkerMpTest, CollectivesExactWorld4) {
  const auto start = Clock::now();
  auto results = RunRanks(4, {"collectives", dir_});
  ExpectAllSucceeded(results);
  ExpectBackend(results, "shm");
  // 4 ranks on 2 cores: the shared-memory waits sleep instead of spinning.
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 60.0);
}

// Two "machines" (GROUP_RANK 0 and 1) of two ranks: shared memory inside each, Gloo between the
// two leaders, broadcast back through shared memory.
TEST_F(WorkerMpTest, CollectivesExactHierarchical2x2) {
  ranks_per_machine_ = 2;
  auto results = RunRanks(4, {"collectives", dir_});
  ExpectAllSucceeded(results);
  ExpectBackend(results, "shm+gloo");
}

TEST_F(WorkerMpTest, EquivalenceWorld2Accum2Micro4) { ExpectEquivalent(2, 2, 4); }

TEST_F(WorkerMpTest, EquivalenceWorld2Accum2Micro4Gloo) {
  ExpectEquivalent(2, 2, 4, "gloo", {{"ACCEL_SHM", "off"}});
}

// bf16 autocast on CPU: the ranks' gradients differ from one process's by bf16 rounding (each
// matmul sees half the batch), so the match is to bf16 precision, not fp32's.
TEST_F(WorkerMpTest, EquivalenceWorld2Bf16) {
  ExpectEquivalent(2, 1, 8, "shm", {{"ACCELERATE_MIXED_PRECISION", "bf16"}}, 5e-3);
}

TEST_F(WorkerMpTest, EquivalenceWorld4Hierarchical2x2Accum2Micro2) {
  ranks_per_machine_ = 2;
  ExpectEquivalent(4, 2, 2, "shm+gloo");
}

TEST_F(WorkerMpTest, EquivalenceWorld4Accum1Micro4) { ExpectEquivalent(4, 1, 4); }

// Overlap forced on (auto turns it off here: 4 processes x 1 thread >= 2 cores), so the
// communication thread runs real collectives while backward continues.
TEST_F(WorkerMpTest, EquivalenceWorld4Accum2Micro2) {
  ExpectEquivalent(4, 2, 2, "shm", {{"ACCEL_OVERLAP", "on"}});
}

TEST_F(WorkerMpTest, InfOnOneRankSkipsTheStepEverywhere) {
  ExpectAllSucceeded(RunRanks(2, {"infskip", dir_}));
}

TEST_F(WorkerMpTest, InfOnOneRankSkipsTheStepEverywhereWorld4) {
  ExpectAllSucceeded(RunRanks(4, {"infskip", dir_}));
}

TEST_F(WorkerMpTest, UnusedParametersWorld2) { ExpectAllSucceeded(RunRanks(2, {"unused", dir_})); }

TEST_F(WorkerMpTest, SaveKillLoadResumesBitIdentical) {
  const std::string ckpt = dir_ + "/ckpt";
  ExpectAllSucceeded(RunRanks(2, {"resume", dir_, "full", dir_ + "/ckpt_full"}));
  auto died = RunRanks(2, {"resume", dir_, "save_and_die", ckpt});
  for (const auto& r : died) EXPECT_EQ(r.exit_code, accel::ExitCodeForSignal(SIGKILL)) << r.output;
  EXPECT_TRUE(fs::exists(ckpt + "/accelerator.pt"));
  EXPECT_FALSE(fs::exists(ckpt + ".tmp"));
  ExpectAllSucceeded(RunRanks(2, {"resume", dir_, "load", ckpt}));
  const auto full = ReadParams("full");
  const auto loaded = ReadParams("load");
  ASSERT_FALSE(full.empty());
  ASSERT_EQ(full.size(), loaded.size());
  EXPECT_EQ(std::memcmp(full.data(), loaded.data(), full.size() * sizeof(float)), 0)
      << "resumed parameters differ (rel " << RelDiff(loaded, full) << ")";
}

// Shared memory: the exited rank is noticed through its pidfd and named by every survivor.
TEST_F(WorkerMpTest, DeadlinePeerExitIsNoticedFast) {
  auto results = RunRanks(3, {"deadline", dir_, "exit"});
  ExpectAllSucceeded(results);
  for (int r : {0, 1}) {
    EXPECT_NE(results[r].output.find("(global rank 2, pid "), std::string::npos)
        << results[r].output;
    EXPECT_NE(results[r].output.find(") exited"), std::string::npos) << results[r].output;
  }
  std::printf("%s", results[0].output.c_str());
}

TEST_F(WorkerMpTest, DeadlinePeerExitIsNoticedFastGloo) {
  auto results = RunRanks(3, {"deadline", dir_, "exit"}, {{"ACCEL_SHM", "off"}});
  ExpectAllSucceeded(results);
  std::printf("%s", results[0].output.c_str());
}

TEST_F(WorkerMpTest, DeadlineFrozenPeerHitsTheCollectiveDeadline) {
  auto results = RunRanks(2, {"deadline", dir_, "freeze"});
  ExpectAllSucceeded(results);
  EXPECT_NE(results[0].output.find("(global rank 1, pid "), std::string::npos) << results[0].output;
  EXPECT_NE(results[0].output.find("did not arrive within"), std::string::npos)
      << results[0].output;
  std::printf("%s", results[0].output.c_str());
}

TEST_F(WorkerMpTest, DeadlineFrozenPeerHitsTheCollectiveDeadlineGloo) {
  auto results = RunRanks(2, {"deadline", dir_, "freeze"}, {{"ACCEL_SHM", "off"}});
  ExpectAllSucceeded(results);
  EXPECT_NE(results[0].output.find("I/O error or timeout"), std::string::npos) << results[0].output;
  std::printf("%s", results[0].output.c_str());
}

// The launcher's real path: the store is the rendezvous server's KV over gRPC, with a token.
class WorkerMpGrpcTest : public WorkerMpTest {
 protected:
  void SetUp() override {
    WorkerMpTest::SetUp();
    accel::rendezvous::ServerOptions options;
    options.run_id = "grpc-run";
    options.token = "s3cret";
    auto server = accel::rendezvous::RendezvousServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  std::map<std::string, std::string> GrpcEnv() {
    return {{"ACCEL_STORE_ENDPOINT", server_->endpoint()},
            {"ACCEL_RDZV_TOKEN", "s3cret"},
            {"TORCHELASTIC_RUN_ID", "grpc-run"}};
  }
  std::unique_ptr<accel::rendezvous::RendezvousServer> server_;
};

TEST_F(WorkerMpGrpcTest, CollectivesOverTheRendezvousStore) {
  ExpectAllSucceeded(RunRanks(2, {"collectives", dir_}, GrpcEnv()));
}

TEST_F(WorkerMpGrpcTest, WrongTokenFailsWithContext) {
  auto env = GrpcEnv();
  env["ACCEL_RDZV_TOKEN"] = "wrong";
  auto results = RunRanks(2, {"collectives", dir_}, env, std::chrono::seconds(120));
  for (const auto& r : results) {
    EXPECT_EQ(r.exit_code, accel::kExitWorkerFailed) << r.output;
    EXPECT_NE(r.output.find("UNAUTHENTICATED"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("token is wrong"), std::string::npos) << r.output;
  }
}

#ifdef ACCEL_MPIRUN
TEST_F(WorkerMpTest, EquivalenceUnderMpirun) {
  const std::vector<float> ref = Reference();
  ASSERT_FALSE(ref.empty());
  // mpirun forms the world: no RANK/WORLD_SIZE, no store.
  pid_t pid = Spawn({ACCEL_MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "2", "-x",
                     "ACCELERATE_GRADIENT_ACCUMULATION_STEPS=2", "-x", "OMP_NUM_THREADS=1", "-x",
                     "ACCELERATE_USE_CPU=true", kRankBinary, "train", dir_, "mpi", "4"},
                    {{"OMPI_MCA_plm_rsh_agent", ""}}, dir_ + "/mpirun.log");
  auto results = Wait({pid}, {dir_ + "/mpirun.log"}, std::chrono::seconds(240));
  ExpectAllSucceeded(results);
  EXPECT_NE(results[0].output.find("backend mpi"), std::string::npos) << results[0].output;
  const std::vector<float> got = ReadParams("mpi");
  ASSERT_EQ(got.size(), ref.size()) << results[0].output;
  const double rel = RelDiff(got, ref);
  std::printf("mpirun -np 2 x accumulation 2 x micro-batch 4 vs world 1: rel diff %.3g\n", rel);
  EXPECT_LT(rel, 1e-5);
}
#endif

}  // namespace
