// FindRendezvousToken: the one place that decides a job's rendezvous token.
//
// A multi-machine job never serves an unauthenticated rendezvous unless the user says so by name
// (rdzv_insecure: true). Sources, first found wins:
//   1. $ACCEL_RDZV_TOKEN
//   2. rdzv_token_file (written by `accel-launch config` next to the config file, 0600; a file
//      another user owns, or that group or others may read, is refused)
// A token the user supplies (1, 2) must be strong: rendezvous::CheckTokenStrength.
//   3. one machine: a fresh random token (no other machine needs to know it)
//   4. the batch scheduler: TokenFromScheduler below, THE place where a scheduler hands a
//      multi-machine job its token (e.g. Slurm over PMI-2)
//   5. rdzv_insecure: true: no token, with a warning
// and otherwise a refusal (FAILED_PRECONDITION; the launcher exits 2) that says how to get one.
#ifndef ACCEL_LAUNCHER_AGENT_RENDEZVOUS_TOKEN_H_
#define ACCEL_LAUNCHER_AGENT_RENDEZVOUS_TOKEN_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/config/config.h"

namespace accel::launcher {

struct RendezvousToken {
  std::string token;   // "" only for a multi-machine job with rdzv_insecure: true
  std::string source;  // where it came from, for the plan, e.g. "rdzv_token_file /etc/job.token"
  std::vector<std::string> warnings;  // to show the user (an insecure job)
};

// Returns the token of a job of `config.num_machines` machines by the rules above. `dry_run`:
// nothing is exchanged with a scheduler. Errors: the token file's (NOT_FOUND,
// PERMISSION_DENIED, INVALID_ARGUMENT, FAILED_PRECONDITION), a weak token (INVALID_ARGUMENT), the
// scheduler's, and
// FAILED_PRECONDITION for a multi-machine job with no token and no rdzv_insecure.
absl::StatusOr<RendezvousToken> FindRendezvousToken(const Config& config, bool dry_run);

// Returns the token a batch scheduler provides for this multi-machine job, nullopt when none
// does (then the job needs a token file or rdzv_insecure), or the scheduler's error. Called only
// when neither $ACCEL_RDZV_TOKEN nor rdzv_token_file gave one, on every machine alike (an
// exchange such as Slurm's PMI-2 fence needs every launcher). Under `dry_run` it must not
// exchange anything: it returns a placeholder token, its `source` saying where the real one would
// come from, when the scheduler would provide one.
absl::StatusOr<std::optional<RendezvousToken>> TokenFromScheduler(const Config& config,
                                                                  bool dry_run);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_RENDEZVOUS_TOKEN_H_
