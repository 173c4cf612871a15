#include "worker/src/comm/shm/topology.h"

#include <unistd.h>

#include <climits>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "accel/error.h"
#include "common/env_contract.h"
#include "common/env_reader.h"

namespace accel::worker::shm {
namespace {

std::string ReadLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string Link(const char* path) {
  char buf[PATH_MAX] = {};
  const ssize_t n = ::readlink(path, buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
}

}  // namespace

bool Topology::AnyShared() const {
  for (const auto& m : machines) {
    if (m.size() > 1) return true;
  }
  return false;
}

std::string HostKey() {
  const char* group = env::Get(env::kGroupRank);
  return std::string(group != nullptr ? group : "-") + "|" +
         ReadLine("/proc/sys/kernel/random/boot_id") + "|" + Link("/proc/self/ns/pid") + "|" +
         std::to_string(::getuid());
}

Topology ParseTopology(const std::string& line, int rank, int world) {
  Topology t;
  std::istringstream in(line);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long m = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || m < 0 || m > static_cast<long>(t.machines.size())) {
      throw Error("discover machines", "\"" + line + "\"", "malformed topology");
    }
    if (m == static_cast<long>(t.machines.size())) t.machines.emplace_back();
    t.machines[m].push_back(static_cast<int>(t.machine_of.size()));
    t.machine_of.push_back(static_cast<int>(m));
  }
  if (static_cast<int>(t.machine_of.size()) != world || rank < 0 || rank >= world) {
    throw Error("discover machines", "\"" + line + "\"",
                "expected " + std::to_string(world) + " ranks");
  }
  t.machine = t.machine_of[rank];
  const auto& mine = t.machines[t.machine];
  for (std::size_t i = 0; i < mine.size(); ++i) {
    if (mine[i] == rank) t.local_rank = static_cast<int>(i);
  }
  return t;
}

Topology DiscoverTopology(Kv& kv, const std::string& prefix, int rank, int world,
                          const std::string& host_key, std::chrono::milliseconds timeout) {
  kv.Set(prefix + "host/" + std::to_string(rank), host_key);
  std::string line;
  if (rank == 0) {
    std::map<std::string, int> index;
    for (int r = 0; r < world; ++r) {
      const std::string key =
          r == 0 ? host_key : kv.Get(prefix + "host/" + std::to_string(r), timeout);
      const auto it = index.emplace(key, static_cast<int>(index.size())).first;
      line += (r == 0 ? "" : ",") + std::to_string(it->second);
    }
    kv.Set(prefix + "topology", line);
  } else {
    line = kv.Get(prefix + "topology", timeout);
  }
  return ParseTopology(line, rank, world);
}

}  // namespace accel::worker::shm
