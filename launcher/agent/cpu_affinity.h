// CPU affinity for --enable_cpu_affinity: each local rank gets its own share of the CPUs this
// launcher may use, NUMA node by NUMA node where the machine has several (local ranks fill the
// nodes in order, so ranks 0..k-1 share node 0, and so on). The workers are pinned in the child
// between fork and exec (SpawnSpec::cpus); libaccel and plain torch scripts keep the pinning,
// HF accelerate's Accelerator re-pins a CUDA rank to its GPU's node itself
// (ACCELERATE_CPU_AFFINITY=1).
#ifndef ACCEL_LAUNCHER_AGENT_CPU_AFFINITY_H_
#define ACCEL_LAUNCHER_AGENT_CPU_AFFINITY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace accel::launcher {

// Parses a kernel CPU list such as "0-3,8-11" or "5". Fails on anything else.
absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text);

// Returns the CPUs of each NUMA node under `sys_root` (/sys/devices/system/node/node<N>/cpulist)
// restricted to `allowed`, nodes without an allowed CPU left out. One node holding every allowed
// CPU when the machine exposes no NUMA information.
std::vector<std::vector<int>> NumaNodes(const std::string& sys_root,
                                        const std::vector<int>& allowed);

// Returns the CPUs of each of `local_ranks` ranks: ranks are spread over `nodes` in contiguous
// blocks, and each node's CPUs are split evenly among its ranks (a rank gets at least one CPU;
// with more ranks than CPUs, ranks share them).
std::vector<std::vector<int>> CpuShares(const std::vector<std::vector<int>>& nodes,
                                        int local_ranks);

// Returns the CPUs this process may run on (sched_getaffinity).
std::vector<int> AllowedCpus();

// Returns the machine's physical cores (distinct package and core ids under
// `sys_root`/devices/system/cpu, as psutil.cpu_count(logical=False) counts them); the online
// CPU count when the topology cannot be read.
int PhysicalCores(const std::string& sys_root);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_CPU_AFFINITY_H_
