// The rendezvous token of a Slurm job step, distributed by Slurm itself: no token file made by
// hand, and still a secret no other user or job can read.
//
// Under `srun` with Slurm's PMI-2 (`srun --mpi=pmi2`, or MpiDefault=pmi2 in slurm.conf) every task
// inherits a socket to its node's slurmstepd ($PMI_FD). The launcher of the step's task 0 draws a
// fresh token (RandomHex(32)) and puts it in the step's PMI-2 key-value space; every launcher of
// the step fences and reads it back. Slurm moves it between its own daemons, which authenticate
// each other with munge, and hands it only to the tasks of this step: it is never written to a
// file, a command line or Slurm's job record, and each step gets its own.
#ifndef ACCEL_LAUNCHER_CONFIG_SLURM_TOKEN_H_
#define ACCEL_LAUNCHER_CONFIG_SLURM_TOKEN_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "launcher/config/source.h"

namespace accel::launcher {

// The PMI-2 key the token is stored under.
inline constexpr char kSlurmTokenKey[] = "accel-rdzv-token";

struct SchedulerToken {
  std::string token;   // 64 lowercase hex characters
  std::string source;  // for the notice, e.g. "Slurm PMI-2 (job 12 step 0, from task 0 of 2)"
};

// Returns the step's token, exchanged as described above; nullopt when this process is not a
// task of a Slurm step with PMI-2 (no SLURM_JOB_ID or no PMI_FD in `env`). Every launcher of the
// step must call it: the fence waits for all of them until `deadline` (DEADLINE_EXCEEDED, with a
// hint). Errors start "exchange the rendezvous token over Slurm's PMI-2".
absl::StatusOr<std::optional<SchedulerToken>> SlurmStepToken(const EnvLookup& env,
                                                             absl::Time deadline);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_SLURM_TOKEN_H_
