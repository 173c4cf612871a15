// Which ranks share a machine, found through the rendezvous store.
//
// Each rank publishes its host key; rank 0 reads them all, numbers the machines in order of
// their lowest rank and publishes one line that every other rank reads (O(world) store calls in
// total). Ranks share a machine when their keys are equal: the launcher's machine rank
// (GROUP_RANK), the kernel's boot id, the pid namespace and the user — so ranks in different
// containers, or "machines" that are network namespaces of one host under different launchers,
// are never put in one shared-memory group.
#ifndef ACCEL_WORKER_COMM_SHM_TOPOLOGY_H_
#define ACCEL_WORKER_COMM_SHM_TOPOLOGY_H_

#include <chrono>
#include <string>
#include <vector>

#include "worker/src/store/kv.h"

namespace accel::worker::shm {

struct Topology {
  std::vector<int> machine_of;             // global rank -> machine index
  std::vector<std::vector<int>> machines;  // machine index -> its global ranks, ascending
  int machine = 0;                         // this rank's machine
  int local_rank = 0;                      // this rank's index in machines[machine]

  int local_size() const { return static_cast<int>(machines[machine].size()); }
  bool is_leader() const { return local_rank == 0; }
  // True when some machine runs more than one rank (shared memory has something to do).
  bool AnyShared() const;
};

// Returns this process's host key (see above).
std::string HostKey();

// Returns the topology of `world` ranks; `prefix` namespaces the keys. Throws accel::Error
// (the store's deadline `timeout`).
Topology DiscoverTopology(Kv& kv, const std::string& prefix, int rank, int world,
                          const std::string& host_key, std::chrono::milliseconds timeout);

// Returns the topology encoded by `line` ("0,0,1,1": machine index per rank) for `rank`.
// Throws accel::Error when malformed.
Topology ParseTopology(const std::string& line, int rank, int world);

}  // namespace accel::worker::shm

#endif  // ACCEL_WORKER_COMM_SHM_TOPOLOGY_H_
