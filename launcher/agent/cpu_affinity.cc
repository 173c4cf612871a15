#include "launcher/agent/cpu_affinity.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace accel::launcher {

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text) {
  std::vector<int> cpus;
  for (absl::string_view part :
       absl::StrSplit(absl::StripAsciiWhitespace(text), ',', absl::SkipEmpty())) {
    const std::vector<absl::string_view> range = absl::StrSplit(part, '-');
    int first = 0, last = 0;
    if (range.size() > 2 || !absl::SimpleAtoi(range.front(), &first) ||
        !absl::SimpleAtoi(range.back(), &last) || first < 0 || last < first ||
        last >= CPU_SETSIZE) {
      return absl::InvalidArgumentError(absl::StrCat("parse CPU list '", text, "'"));
    }
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  return cpus;
}

std::vector<std::vector<int>> NumaNodes(const std::string& sys_root,
                                        const std::vector<int>& allowed) {
  std::map<int, std::vector<int>> by_node;
  if (DIR* dir = ::opendir((sys_root + "/devices/system/node").c_str()); dir != nullptr) {
    while (const dirent* entry = ::readdir(dir)) {
      const absl::string_view name = entry->d_name;
      int node = 0;
      if (!absl::StartsWith(name, "node") || !absl::SimpleAtoi(name.substr(4), &node)) continue;
      std::ifstream in(absl::StrCat(sys_root, "/devices/system/node/", entry->d_name, "/cpulist"));
      std::stringstream text;
      text << in.rdbuf();
      absl::StatusOr<std::vector<int>> cpus = ParseCpuList(text.str());
      if (!cpus.ok()) continue;
      for (int cpu : *cpus) {
        if (std::find(allowed.begin(), allowed.end(), cpu) != allowed.end()) {
          by_node[node].push_back(cpu);
        }
      }
    }
    ::closedir(dir);
  }
  std::vector<std::vector<int>> nodes;
  for (auto& [node, cpus] : by_node) {
    if (!cpus.empty()) nodes.push_back(std::move(cpus));
  }
  if (nodes.empty() && !allowed.empty()) nodes.push_back(allowed);
  return nodes;
}

std::vector<std::vector<int>> CpuShares(const std::vector<std::vector<int>>& nodes,
                                        int local_ranks) {
  std::vector<std::vector<int>> shares(static_cast<size_t>(std::max(local_ranks, 0)));
  if (nodes.empty() || local_ranks <= 0) return shares;
  const int node_count = static_cast<int>(nodes.size());
  for (int node = 0; node < node_count; ++node) {
    // Ranks [first, last) go to this node: contiguous blocks, as even as they can be.
    const int first = node * local_ranks / node_count;
    const int last = (node + 1) * local_ranks / node_count;
    const std::vector<int>& cpus = nodes[static_cast<size_t>(node)];
    const int ranks = last - first;
    const int count = static_cast<int>(cpus.size());
    for (int i = 0; i < ranks; ++i) {
      std::vector<int>& share = shares[static_cast<size_t>(first + i)];
      if (ranks <= count) {
        for (int c = i * count / ranks; c < (i + 1) * count / ranks; ++c) {
          share.push_back(cpus[static_cast<size_t>(c)]);
        }
      } else {
        share.push_back(cpus[static_cast<size_t>(i % count)]);
      }
    }
  }
  return shares;  // the blocks cover every rank, and each rank got at least one CPU
}

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

int PhysicalCores(const std::string& sys_root) {
  std::set<std::pair<std::string, std::string>> cores;
  const std::string cpu_dir = sys_root + "/devices/system/cpu";
  if (DIR* dir = ::opendir(cpu_dir.c_str()); dir != nullptr) {
    while (const dirent* entry = ::readdir(dir)) {
      const absl::string_view name = entry->d_name;
      int cpu = 0;
      if (!absl::StartsWith(name, "cpu") || !absl::SimpleAtoi(name.substr(3), &cpu)) continue;
      const std::string topology = absl::StrCat(cpu_dir, "/", entry->d_name, "/topology/");
      std::ifstream package(topology + "physical_package_id");
      std::ifstream core(topology + "core_id");
      std::string package_id, core_id;
      if (package >> package_id && core >> core_id) cores.emplace(package_id, core_id);
    }
    ::closedir(dir);
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  return std::max(static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)), 1);
}

}  // namespace accel::launcher
