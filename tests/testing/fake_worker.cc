// fake_worker: a scriptable worker for the launcher's tests. Every behaviour is a flag:
//   --print_env[=A,B]     print "ENV NAME=value" (or "ENV NAME unset") for the contract names
//   --print_pids          print "PID <pid> PPID <parent pid>"
//   --list_fds            print "FDS 0 1 2 ..." (the open descriptors, /proc/self/fd)
//   --pid_dir=DIR         write DIR/rank_<RANK>.pid with this process's pid
//   --lines=N[:LEN]       print N stdout lines of LEN characters (default 80), "rank R line I xxx"
//   --stderr=TEXT         print TEXT to stderr (one line)
//   --progress=N          write ACCEL_PROGRESS_FILE steps 1..N, 10 ms apart, then keep sleeping
//   --ignore_term         ignore SIGTERM
//   --sleep=S             sleep S seconds (fractions allowed) before finishing
//   --fail_rank=R         the failure flags below apply to RANK R only (default: every rank)
//   --fail_sleep=S        the failing rank sleeps S seconds instead of --sleep
//   --write_error=MSG     write {"message": MSG, "time": ..., "rank": R} to ACCEL_ERROR_FILE
//   --signal=N            raise signal N at the end
//   --exit=N              exit with N at the end
//   --fail_until_restart=K  exit 1 while TORCHELASTIC_RESTART_COUNT < K, then 0
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/env_contract.h"
#include "common/env_reader.h"
#include "common/exit_codes.h"

namespace {

const char* const kContract[] = {"RANK",
                                 "LOCAL_RANK",
                                 "WORLD_SIZE",
                                 "LOCAL_WORLD_SIZE",
                                 "GROUP_RANK",
                                 "GROUP_WORLD_SIZE",
                                 "ROLE_RANK",
                                 "ROLE_NAME",
                                 "MASTER_ADDR",
                                 "MASTER_PORT",
                                 "TORCHELASTIC_RESTART_COUNT",
                                 "TORCHELASTIC_MAX_RESTARTS",
                                 "TORCHELASTIC_RUN_ID",
                                 "OMP_NUM_THREADS",
                                 "ACCELERATE_MIXED_PRECISION",
                                 "ACCELERATE_USE_CPU",
                                 "ACCELERATE_DEBUG_MODE",
                                 "ACCELERATE_GRADIENT_ACCUMULATION_STEPS",
                                 "ACCEL_STORE_ENDPOINT",
                                 "ACCEL_RDZV_TOKEN",
                                 "ACCEL_ERROR_FILE",
                                 "ACCEL_BACKEND",
                                 "ACCEL_PROGRESS_FILE",
                                 "CUDA_VISIBLE_DEVICES"};

bool Flag(const char* arg, const char* name, std::string* value) {
  const std::size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0) return false;
  if (arg[n] == '\0') {
    value->clear();
    return true;
  }
  if (arg[n] != '=') return false;
  *value = arg + n + 1;
  return true;
}

void SleepSeconds(double s) {
  if (s <= 0) return;
  timespec ts{static_cast<time_t>(s), static_cast<long>((s - static_cast<time_t>(s)) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

void WriteProgress(const char* path, std::uint64_t step) {
  const std::string tmp = std::string(path) + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(step >> (8 * i));
  (void)!::write(fd, bytes, sizeof(bytes));
  ::close(fd);
  ::rename(tmp.c_str(), path);
}

// --print_env[=A,B]: the named variables, or the whole contract.
void PrintEnv(const std::string& list) {
  std::vector<std::string> names;
  if (list.empty()) {
    names.assign(std::begin(kContract), std::end(kContract));
  } else {
    for (std::size_t p = 0; p <= list.size();) {
      std::size_t e = list.find(',', p);
      if (e == std::string::npos) e = list.size();
      names.push_back(list.substr(p, e - p));
      p = e + 1;
    }
  }
  for (const std::string& name : names) {
    const char* value = std::getenv(name.c_str());
    if (value != nullptr) {
      std::printf("ENV %s=%s\n", name.c_str(), value);
    } else {
      std::printf("ENV %s unset\n", name.c_str());
    }
  }
}

// --list_fds: every open descriptor but the one reading /proc/self/fd.
void ListFds() {
  std::string line = "FDS";
  DIR* dir = ::opendir("/proc/self/fd");
  const int own = dir != nullptr ? ::dirfd(dir) : -1;
  for (dirent* e = dir != nullptr ? ::readdir(dir) : nullptr; e != nullptr; e = ::readdir(dir)) {
    if (e->d_name[0] == '.' || std::atoi(e->d_name) == own) continue;
    line += " ";
    line += e->d_name;
  }
  if (dir != nullptr) ::closedir(dir);
  std::printf("%s\n", line.c_str());
}

// --lines=N[:LEN]
void PrintLines(const std::string& spec, int rank) {
  const int n = std::atoi(spec.c_str());
  const std::size_t colon = spec.find(':');
  const int len = colon == std::string::npos ? 80 : std::atoi(spec.c_str() + colon + 1);
  for (int l = 0; l < n; ++l) {
    std::string line = "rank " + std::to_string(rank) + " line " + std::to_string(l) + " ";
    while (static_cast<int>(line.size()) < len) line.push_back('x');
    std::printf("%s\n", line.c_str());
  }
}

// --progress=N
void WriteProgressSteps(int steps) {
  const char* path = accel::env::Get(accel::env::kProgressFile);
  for (int s = 1; path != nullptr && s <= steps; ++s) {
    WriteProgress(path, static_cast<std::uint64_t>(s));
    SleepSeconds(0.01);
  }
}

// How the worker ends, from the flags that apply at the end.
struct Ending {
  double sleep_s = 0;
  double fail_sleep_s = -1;
  int fail_rank = -1;
  int exit_code = 0;
  int signal_number = 0;
  int fail_until = -1;
  bool write_error = false;
  std::string error_message;
};

// Applies one flag: acts now (printing, files, signal disposition) or records it in `ending`.
// Returns false for an unknown flag.
bool ApplyFlag(const char* arg, int rank, Ending& ending) {
  std::string v;
  if (Flag(arg, "--print_env", &v)) {
    PrintEnv(v);
  } else if (Flag(arg, "--print_pids", &v)) {
    std::printf("PID %d PPID %d\n", static_cast<int>(::getpid()), static_cast<int>(::getppid()));
  } else if (Flag(arg, "--list_fds", &v)) {
    ListFds();
  } else if (Flag(arg, "--pid_dir", &v)) {
    std::ofstream(v + "/rank_" + std::to_string(rank) + ".pid") << ::getpid() << "\n";
  } else if (Flag(arg, "--lines", &v)) {
    PrintLines(v, rank);
  } else if (Flag(arg, "--stderr", &v)) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", v.c_str());
  } else if (Flag(arg, "--progress", &v)) {
    WriteProgressSteps(std::atoi(v.c_str()));
  } else if (Flag(arg, "--ignore_term", &v)) {
    ::signal(SIGTERM, SIG_IGN);
  } else if (Flag(arg, "--sleep", &v)) {
    ending.sleep_s = std::atof(v.c_str());
  } else if (Flag(arg, "--fail_rank", &v)) {
    ending.fail_rank = std::atoi(v.c_str());
  } else if (Flag(arg, "--fail_sleep", &v)) {
    ending.fail_sleep_s = std::atof(v.c_str());
  } else if (Flag(arg, "--write_error", &v)) {
    ending.write_error = true;
    ending.error_message = v;
  } else if (Flag(arg, "--signal", &v)) {
    ending.signal_number = std::atoi(v.c_str());
  } else if (Flag(arg, "--exit", &v)) {
    ending.exit_code = std::atoi(v.c_str());
  } else if (Flag(arg, "--fail_until_restart", &v)) {
    ending.fail_until = std::atoi(v.c_str());
  } else {
    return false;
  }
  return true;
}

// Sleeps, then fails as `ending` says (when this rank fails). Returns the exit code.
int Finish(const Ending& ending, int rank) {
  const bool failing = ending.fail_rank < 0 || ending.fail_rank == rank;
  SleepSeconds(failing && ending.fail_sleep_s >= 0 ? ending.fail_sleep_s : ending.sleep_s);
  if (ending.fail_until >= 0) {
    return accel::env::GetInt(accel::env::kRestartCount, 0).value_or(0) < ending.fail_until
               ? accel::kExitWorkerFailed
               : accel::kExitOk;
  }
  if (!failing) return accel::kExitOk;
  if (ending.write_error) {
    if (const char* path = accel::env::Get(accel::env::kErrorFile); path != nullptr) {
      std::ofstream(path) << "{\"message\": \"" << ending.error_message
                          << "\", \"time\": " << ::time(nullptr) << ", \"rank\": " << rank << "}\n";
    }
  }
  if (ending.signal_number > 0) {
    ::signal(ending.signal_number, SIG_DFL);
    ::raise(ending.signal_number);
  }
  return ending.exit_code;
}

}  // namespace

// Under ASan, LeakSanitizer's exit-time check clones a tracer task; a worker the launcher kills
// during that check would orphan it, and the tests check that nothing is ever orphaned.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }

int main(int argc, char** argv) {
  const int rank = accel::env::GetInt(accel::env::kRank, -1).value_or(-1);
  Ending ending;
  for (int i = 1; i < argc; ++i) {
    if (!ApplyFlag(argv[i], rank, ending)) {
      std::fprintf(stderr, "fake_worker: unknown flag %s\n", argv[i]);
      return accel::kExitUsage;
    }
  }
  std::fflush(stdout);
  return Finish(ending, rank);
}
