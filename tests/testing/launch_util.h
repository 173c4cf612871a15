// Test helper: run a command (accel-launch) with captured stdout/stderr and a deadline.
#ifndef ACCEL_TESTS_TESTING_LAUNCH_UTIL_H_
#define ACCEL_TESTS_TESTING_LAUNCH_UTIL_H_

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/exit_codes.h"
#include "launcher/process/os_util.h"
#include "launcher/process/subprocess.h"

namespace accel::testing {

struct RunResult {
  int exit_code = -1;  // ExitCodeForSignal(N) when killed by signal N; -1 at the deadline
  std::string out;
  std::string err;
  absl::Duration elapsed;
  bool timed_out = false;
};

// Runs `argv` (argv[0] a path) with exactly the environment `env`; SIGKILLs it at `timeout`.
// `while_running` is called once with the child's pid once it has started.
inline RunResult RunWithEnvironment(const std::vector<std::string>& argv,
                                    const std::vector<std::string>& env,
                                    absl::Duration timeout = absl::Seconds(60),
                                    const std::function<void(pid_t)>& while_running = nullptr) {
  RunResult r;
  auto out = launcher::MakePipe();
  auto err = launcher::MakePipe();
  if (!out.ok() || !err.ok()) return r;
  launcher::SpawnSpec spec;
  spec.label = "test command";
  spec.path = argv.front();
  spec.argv = argv;
  spec.env = env;
  spec.stdout_fd = out->second.get();
  spec.stderr_fd = err->second.get();
  const absl::Time start = absl::Now();
  auto child = launcher::Spawn(spec);
  if (!child.ok()) {
    r.err = std::string(child.status().message());
    return r;
  }
  out->second.reset();
  err->second.reset();
  if (while_running) while_running(child->pid());
  const absl::Time deadline = start + timeout;
  bool out_open = true, err_open = true;
  while (out_open || err_open || child->running()) {
    std::vector<pollfd> fds;
    if (out_open) fds.push_back({out->first.get(), POLLIN, 0});
    if (err_open) fds.push_back({err->first.get(), POLLIN, 0});
    if (child->running()) fds.push_back({child->pidfd(), POLLIN, 0});
    const int64_t left = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    ::poll(fds.data(), fds.size(), static_cast<int>(left));
    char buf[65536];
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      if (p.fd == out->first.get() || p.fd == err->first.get()) {
        const ssize_t n = ::read(p.fd, buf, sizeof(buf));
        if (n <= 0) {
          (p.fd == out->first.get() ? out_open : err_open) = false;
        } else {
          (p.fd == out->first.get() ? r.out : r.err).append(buf, static_cast<size_t>(n));
        }
      } else {
        child->TryReap();
      }
    }
  }
  r.elapsed = absl::Now() - start;
  if (r.timed_out) return r;  // ~ChildProcess SIGKILLs and reaps it
  const launcher::ExitStatus& s = *child->status();
  r.exit_code = s.signal != 0 ? ExitCodeForSignal(s.signal) : s.exit_code;
  return r;
}

// Runs `argv` (argv[0] a path) with the test's environment plus `extra_env` (names not already
// set); SIGKILLs it at `timeout`. `while_running` is called once with the child's pid.
inline RunResult RunCommand(const std::vector<std::string>& argv,
                            const std::vector<std::string>& extra_env = {},
                            absl::Duration timeout = absl::Seconds(60),
                            const std::function<void(pid_t)>& while_running = nullptr) {
  std::vector<std::string> env = launcher::CurrentEnvironment();
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  return RunWithEnvironment(argv, env, timeout, while_running);
}

// Returns the lines of `text` that start with `prefix`.
inline std::vector<std::string> LinesWith(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.substr(0, prefix.size()) == prefix) out.emplace_back(line);
  }
  return out;
}

// Parses "[rank R] ENV NAME=value" lines into rank → name → value ("<unset>" when unset).
inline std::map<int, std::map<std::string, std::string>> EnvByRank(const std::string& out) {
  std::map<int, std::map<std::string, std::string>> env;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    // "[rank 3] ENV ..." or, printed once for several ranks (dedup_output), "[ranks 0-2,5] ENV".
    const size_t skip = line.substr(0, 7) == "[ranks " ? 7 : line.substr(0, 6) == "[rank " ? 6 : 0;
    if (skip == 0) continue;
    const size_t close = line.find("] ENV ");
    if (close == absl::string_view::npos) continue;
    std::vector<int> ranks;
    for (absl::string_view part : absl::StrSplit(line.substr(skip, close - skip), ',')) {
      std::vector<absl::string_view> ends = absl::StrSplit(part, '-');
      int first = -1, last = -1;
      if (!absl::SimpleAtoi(ends[0], &first)) continue;
      if (ends.size() < 2 || !absl::SimpleAtoi(ends[1], &last)) last = first;
      for (int rank = first; rank <= last; ++rank) ranks.push_back(rank);
    }
    absl::string_view rest = line.substr(close + 6);
    const size_t eq = rest.find('=');
    for (int rank : ranks) {
      if (eq == absl::string_view::npos) {
        env[rank][std::string(rest.substr(0, rest.find(' ')))] = "<unset>";
      } else {
        env[rank][std::string(rest.substr(0, eq))] = std::string(rest.substr(eq + 1));
      }
    }
  }
  return env;
}

// Returns whether `pid` is still a live (non-zombie) process.
inline bool Alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;
  char state = '?';
  (void)std::fscanf(f, "%*d %*s %c", &state);
  std::fclose(f);
  return state != 'Z' && state != 'X';
}

// Returns why /usr/bin/python3 (Debian's python3-torch) cannot run the torch.distributed test
// scripts, or "" when it can: missing, the import failing (its last error line), or the import
// not done within 180 s (it took 62 s on the 2-core VM under eight builds). Asked once.
inline const std::string& TorchPythonMissing() {
  static const std::string why = [] {
    const std::string probe = "/usr/bin/python3 -c 'import torch.distributed'";
    if (::access("/usr/bin/python3", X_OK) != 0) return std::string("no /usr/bin/python3");
    const RunResult r =
        RunCommand({"/usr/bin/python3", "-c", "import torch.distributed"}, {}, absl::Seconds(180));
    if (r.timed_out) return probe + " did not finish within 180 s";
    if (r.exit_code == kExitOk) return std::string();
    std::vector<std::string> lines = absl::StrSplit(r.err, '\n', absl::SkipWhitespace());
    return probe + " failed (Debian's python3-torch missing?): " +
           (lines.empty() ? "exit " + std::to_string(r.exit_code) : lines.back());
  }();
  return why;
}

}  // namespace accel::testing

#endif  // ACCEL_TESTS_TESTING_LAUNCH_UTIL_H_
