// What the agent says about elastic membership (docs/config.md "Elastic membership"): one line
// per generation that changed who is in the job, on every machine, and the line that names the
// spent restart budget. Pure: the agent's attempt loop (agent_attempt.cc) prints them.
#ifndef ACCEL_LAUNCHER_AGENT_ELASTIC_H_
#define ACCEL_LAUNCHER_AGENT_ELASTIC_H_

#include <string>

#include "absl/time/time.h"

namespace accel::launcher {

// One membership change as this machine saw it.
struct GenerationChange {
  int generation = 0;      // the new generation (the rendezvous attempt)
  std::string membership;  // who left and why, who joined (the server's description)
  int old_world = 0;       // ranks before, after
  int new_world = 0;
  int machines = 0;  // machines in the new generation
  int restart_count = 0;
  int max_restarts = 0;
  // From this machine learning of the change (the server's restart event, or its own worker's
  // failure) to the new generation's rendezvous completing.
  absl::Duration took;
};

// Returns "membership: generation 2: machine 1 (host b) left: lost: ...; world 4 -> 2 (1
// machine); restarts 1 of 3; recovered in 0.41 s"; for a machine's first generation (old_world
// 0: it joined a running job) "...; world 4 (2 machines); restarts 1 of 3; joined in 0.20 s".
std::string FormatGenerationChange(const GenerationChange& change);

// Returns the line an evicted machine ends with: "membership: machine 1 (host b) evicted: the
// job's hang verdict names its rank 3; the other machines go on without it".
// With `failed` (an in-place job's failed worker): "... evicted: its rank 3 failed; ...".
std::string FormatEviction(int machine_rank, const std::string& host, int rank,
                           bool failed = false);

// Returns the line that ends a job whose failure found the restart budget spent: "restart budget
// spent: max_restarts 3, 3 restarts used by the job (lost machines and failures count, on every
// machine; machines joining do not)"; "" while restarts remain or none were allowed.
std::string DescribeSpentBudget(int restart_count, int max_restarts);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_ELASTIC_H_
