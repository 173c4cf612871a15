// Runs one program as `world` ranks on this machine with accel-launch's env contract (RANK,
// WORLD_SIZE, LOCAL_RANK, GROUP_RANK, ACCEL_STORE_ENDPOINT=file://<dir>/store, CPU), each in its
// own process group with its output in a log, and waits with a deadline (killing the rest).
#ifndef ACCEL_TESTS_TESTING_MP_RANKS_H_
#define ACCEL_TESTS_TESTING_MP_RANKS_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/exit_codes.h"

extern char** environ;

namespace accel::testing {

struct RankRun {
  int exit_code = -1;  // ExitCodeFromWaitStatus; -1 when killed at the deadline
  std::string output;
};

// `per_machine` > 0: consecutive ranks play machines of that many ranks (GROUP_RANK), so the
// shared-memory communicator goes hierarchical. `run_id` must differ between runs in one `dir`
// (two calls with the same one share the store: ranks `first`.. `first + count - 1` of `world`
// started later, e.g. machines joining; count < 0: the rest of the world). Results by rank -
// first.
inline std::vector<RankRun> RunRanks(const std::string& binary, int world, int per_machine,
                                     const std::vector<std::string>& args,
                                     const std::map<std::string, std::string>& extra_env,
                                     const std::string& dir, const std::string& run_id,
                                     std::chrono::seconds deadline, int first = 0, int count = -1) {
  if (per_machine <= 0) per_machine = world;
  if (count < 0) count = world - first;
  std::vector<pid_t> pids;
  std::vector<std::string> logs;
  for (int r = first; r < first + count; ++r) {
    std::map<std::string, std::string> env = {
        {"RANK", std::to_string(r)},
        {"LOCAL_RANK", std::to_string(r % per_machine)},
        {"WORLD_SIZE", std::to_string(world)},
        {"LOCAL_WORLD_SIZE", std::to_string(per_machine)},
        {"GROUP_RANK", std::to_string(r / per_machine)},
        {"MASTER_ADDR", "127.0.0.1"},
        {"ACCEL_STORE_ENDPOINT", "file://" + dir + "/store_" + run_id},
        {"TORCHELASTIC_RUN_ID", run_id},
        {"OMP_NUM_THREADS", "1"},
        {"ACCELERATE_USE_CPU", "true"},
    };
    for (const auto& [k, v] : extra_env) env[k] = v;
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      if (env.count(kv.substr(0, kv.find('='))) == 0) env_strings.push_back(kv);
    }
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    std::vector<std::string> argv = {binary};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv, cenv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    for (auto& e : env_strings) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    logs.push_back(dir + "/" + run_id + "_rank" + std::to_string(r) + ".log");
    const int fd = ::open(logs.back().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execve(cargv[0], cargv.data(), cenv.data());
      ::_exit(accel::kExitExecFailed);
    }
    ::close(fd);
    pids.push_back(pid);
  }
  std::vector<RankRun> results(pids.size());
  std::vector<bool> done(pids.size(), false);
  const auto end = std::chrono::steady_clock::now() + deadline;
  std::size_t remaining = pids.size();
  while (remaining > 0) {
    for (std::size_t i = 0; i < pids.size(); ++i) {
      int status = 0;
      if (!done[i] && ::waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        done[i] = true;
        --remaining;
        results[i].exit_code = accel::ExitCodeFromWaitStatus(status);
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > end) {
      for (std::size_t i = 0; i < pids.size(); ++i) {
        if (done[i]) continue;
        ::kill(-pids[i], SIGKILL);
        ::waitpid(pids[i], nullptr, 0);
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::size_t i = 0; i < pids.size(); ++i) {
    std::ifstream in(logs[i]);
    results[i].output.assign(std::istreambuf_iterator<char>(in), {});
  }
  return results;
}

}  // namespace accel::testing

#endif  // ACCEL_TESTS_TESTING_MP_RANKS_H_
