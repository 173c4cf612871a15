// launch_bench: launch overhead of accel-launch vs torchrun.
//
// Starts and reaps 2 no-op workers (/bin/true) on one machine, many times, with each launcher:
//   accel-launch --use_cpu --num_processes 2 /bin/true
//   torchrun --standalone --nproc_per_node=2 --no_python true   (Debian's, via
//       bench/torchrun_compat.py, which fixes its --redirects/--tee parsing on Python 3.11)
// and reports wall time (median, min) and the launcher process's peak RSS (wait4's ru_maxrss),
// with accel-launch / torchrun ratios, as a table, CSV and JSON (bench/results/launch_bench.*).
// Usage: launch_bench [--accel PATH] [--runs N] [--torchrun_runs N] [--out DIR]
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/exit_codes.h"

extern char** environ;  // NOLINT: POSIX

namespace {

struct Sample {
  double wall_ms = 0;
  double rss_mib = 0;
  int exit_code = 0;
};

struct Summary {
  std::string name;
  std::string command;
  int runs = 0;
  int failures = 0;
  double median_ms = 0;
  double min_ms = 0;
  double peak_rss_mib = 0;
};

// Runs `argv` once with stdout/stderr to /dev/null; returns wall time and its peak RSS.
Sample RunOnce(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  Sample s;
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) != 0) {
    s.exit_code = accel::kExitExecFailed;
    posix_spawn_file_actions_destroy(&actions);
    return s;
  }
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  rusage usage{};
  while (wait4(pid, &status, 0, &usage) < 0) {
  }
  s.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  s.rss_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is KiB on Linux
  s.exit_code = accel::ExitCodeFromWaitStatus(status);
  return s;
}

Summary Measure(const std::string& name, const std::vector<std::string>& argv, int runs) {
  Summary out;
  out.name = name;
  for (const std::string& a : argv) out.command += (out.command.empty() ? "" : " ") + a;
  RunOnce(argv);  // warm the page cache; not counted
  std::vector<double> walls;
  for (int i = 0; i < runs; ++i) {
    const Sample s = RunOnce(argv);
    if (s.exit_code != accel::kExitOk) ++out.failures;
    walls.push_back(s.wall_ms);
    out.peak_rss_mib = std::max(out.peak_rss_mib, s.rss_mib);
  }
  std::sort(walls.begin(), walls.end());
  out.runs = runs;
  out.median_ms = walls[walls.size() / 2];
  out.min_ms = walls.front();
  return out;
}

std::string SourceDir() {
  const char* dir = std::getenv("ACCEL_SOURCE_DIR");
  return dir != nullptr ? dir : ACCEL_SOURCE_DIR_DEFAULT;
}

}  // namespace

int main(int argc, char** argv) {
  std::string accel = ACCEL_LAUNCH_PATH_DEFAULT;
  std::string out_dir = SourceDir() + "/bench/results";
  int runs = 50, torchrun_runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--accel") {
      accel = argv[i + 1];
    } else if (flag == "--runs") {
      runs = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "--torchrun_runs") {
      torchrun_runs = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "--out") {
      out_dir = argv[i + 1];
    } else {
      std::fprintf(stderr,
                   "usage: launch_bench [--accel PATH] [--runs N] [--torchrun_runs N] "
                   "[--out DIR]\n");
      return accel::kExitUsage;
    }
  }
  const Summary a =
      Measure("accel-launch", {accel, "--use_cpu", "--num_processes", "2", "/bin/true"}, runs);
  const Summary t = Measure("torchrun",
                            {"/usr/bin/python3", SourceDir() + "/bench/torchrun_compat.py",
                             "--standalone", "--nproc_per_node=2", "--no_python", "true"},
                            torchrun_runs);
  const double wall_ratio = a.median_ms / t.median_ms;
  const double rss_ratio = a.peak_rss_mib / t.peak_rss_mib;

  std::printf("launch overhead: start and reap 2 no-op workers (/bin/true), one machine\n");
  std::printf("%-14s %5s %5s %12s %12s %14s\n", "launcher", "runs", "fail", "median ms", "min ms",
              "peak RSS MiB");
  for (const Summary& s : {a, t}) {
    std::printf("%-14s %5d %5d %12.2f %12.2f %14.1f\n", s.name.c_str(), s.runs, s.failures,
                s.median_ms, s.min_ms, s.peak_rss_mib);
  }
  std::printf(
      "ratio accel/torchrun: wall %.4f (1/%.0f, goal <= 1/100), RSS %.3f "
      "(%.1f MiB, goal <= 20 MiB)\n",
      wall_ratio, 1.0 / wall_ratio, rss_ratio, a.peak_rss_mib);

  ::mkdir(out_dir.c_str(), 0755);
  std::ofstream csv(out_dir + "/launch_bench.csv");
  csv << "launcher,runs,failures,median_ms,min_ms,peak_rss_mib,command\n";
  for (const Summary& s : {a, t}) {
    csv << s.name << "," << s.runs << "," << s.failures << "," << s.median_ms << "," << s.min_ms
        << "," << s.peak_rss_mib << ",\"" << s.command << "\"\n";
  }
  std::ofstream json(out_dir + "/launch_bench.json");
  json << "{\n  \"benchmark\": \"launch_overhead\",\n  \"workers\": 2,\n  \"results\": [\n";
  for (const Summary* s : {&a, &t}) {
    json << "    {\"launcher\": \"" << s->name << "\", \"runs\": " << s->runs
         << ", \"failures\": " << s->failures << ", \"median_ms\": " << s->median_ms
         << ", \"min_ms\": " << s->min_ms << ", \"peak_rss_mib\": " << s->peak_rss_mib
         << ", \"command\": \"" << s->command << "\"}" << (s == &a ? ",\n" : "\n");
  }
  json << "  ],\n  \"wall_ratio\": " << wall_ratio << ",\n  \"rss_ratio\": " << rss_ratio
       << ",\n  \"goal_wall_ratio\": 0.01,\n  \"goal_rss_mib\": 20\n}\n";
  std::printf("wrote %s/launch_bench.{csv,json}\n", out_dir.c_str());
  return a.failures == 0 && t.failures == 0 ? accel::kExitOk : accel::kExitWorkerFailed;
}
