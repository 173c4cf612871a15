// The rendezvous protocol's plain types: what a machine sends when it joins, what
// it is told back, and the events of an attempt. No gRPC: the coordinator, the agent and the gRPC
// conversions all speak these.
#ifndef ACCEL_RENDEZVOUS_JOIN_TYPES_H_
#define ACCEL_RENDEZVOUS_JOIN_TYPES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace accel::rendezvous {

// What one machine tells the server when it joins.
struct JoinRequest {
  std::string run_id;  // "" = the run the server serves (JoinResult.run_id says which)
  int machine_rank = 0;
  int num_machines = 1;
  int num_processes = 1;    // total across all machines, as configured (checked at join)
  int local_processes = 1;  // processes on this machine (processes per machine may differ)
  std::string hostname;
  std::vector<std::string> addresses;  // addresses other machines can reach this one at
  // Settings that must agree on every machine: key → hash (or the value itself). A mismatch
  // names the differing keys.
  std::map<std::string, std::string> config_fingerprint;
  std::string accel_version;                    // accel-launch version
  std::map<std::string, std::string> versions;  // e.g. libtorch, cuda, nccl → version string
  std::string device_summary;                   // e.g. "2x Tesla T4" or "cpu"
  // JoinResult.machines filled: O(num_machines) bytes per machine, so off by default;
  // JoinResult.self always says what this machine needs.
  bool want_machines = false;
};

// One machine of a completed attempt.
struct MachineEntry {
  int machine_rank = 0;
  std::string hostname;
  std::string address;  // the address its agent connected from (or its first advertised one)
  int base_rank = 0;    // global rank of its local rank 0
  int local_processes = 0;
};

// What Join returns once every machine of the attempt is in.
struct JoinResult {
  std::int64_t attempt = 0;            // 0 for the first attempt, +1 per restart
  int base_rank = 0;                   // prefix sum of local_processes over lower machine ranks
  int world_size = 0;                  // sum of local_processes over all machines
  std::string master_addr;             // machine 0's address
  int master_port = 0;                 // a free port on machine 0, for torch-style workers
  std::string store_endpoint;          // host:port of the KV store (ConnectStore)
  std::string store_namespace;         // StoreNamespace(run_id, attempt)
  std::vector<MachineEntry> machines;  // ordered by machine_rank; only with want_machines
  std::vector<std::string> warnings;   // e.g. version mismatch when not strict
  MachineEntry self;                   // this machine's own entry
  std::string run_id;                  // the run the server serves
  // This machine's secret for this attempt: the client sends it with Watch, Heartbeat and
  // reports, so that no other client can speak for this machine.
  std::string machine_secret;
  // This machine's index among the attempt's machines (machine_rank order, dense: GROUP_RANK)
  // and how many there are (GROUP_WORLD_SIZE); they differ from machine_rank and num_machines
  // only under elastic membership.
  int group_rank = 0;
  int group_world_size = 1;
  int restart_count = 0;   // job-wide restarts so far (TORCHELASTIC_RESTART_COUNT)
  std::string membership;  // what changed since the previous attempt ("" = nothing)
  // The previous attempt's machines here go on in place (JoinResponse.continues).
  bool continues = false;
};

// Why a job stopped: the first failure is the root cause.
struct RootCause {
  int machine_rank = -1;  // -1: the rendezvous server itself (e.g. connection lost)
  std::string hostname;
  int rank = -1;      // global rank of the failing worker; -1: the agent itself
  int exit_code = 0;  // exit code of the failing worker, when it exited
  int signal = 0;     // signal that killed it, when it was killed (exit_code then 0)
  std::string message;
};

// An event on the Watch stream. kAbort, kRestart, kDone and kServerLost end the stream: exactly
// one of them is delivered per Watch.
struct Event {
  enum class Kind {
    kAbort,       // stop local workers; root_cause says why (a failure or a lost machine)
    kRestart,     // stop local workers and Join again; `attempt` is the new attempt
    kDone,        // every machine reported done
    kServerLost,  // the stream to the server broke; root_cause.message says how
  };
  Kind kind = Kind::kAbort;
  std::int64_t attempt = 0;
  RootCause root_cause;
  // kServerLost: the server stopped answering heartbeats (down, or the network is), rather than
  // its connection closing (the server process is gone).
  bool server_unreachable = false;
  // kAbort sent to this machine alone: the job's hang verdict named its rank and the job goes on
  // without it (elastic membership); root_cause is that verdict.
  bool evicted = false;
};

// Returns the store namespace of `attempt` of `run_id`: workers pass it to ConnectStore.
std::string StoreNamespace(const std::string& run_id, std::int64_t attempt);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_JOIN_TYPES_H_
