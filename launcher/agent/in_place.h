// In-place recovery under elastic membership (docs/libaccel.md "In-place recovery"): which
// generation changes a machine's running workers go on through, and the generation file
// (ACCEL_GENERATION_FILE, worker/src/elastic/generation.h) that tells them the new one.
#ifndef ACCEL_LAUNCHER_AGENT_IN_PLACE_H_
#define ACCEL_LAUNCHER_AGENT_IN_PLACE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "launcher/agent/plan.h"

namespace accel::launcher {

// The generation file's name in the run directory (one per machine and run).
inline constexpr char kGenerationFileName[] = "generation";

// Returns whether the workers running in generation `current` go on in place into `next`: when
// `next` is newer and the server says the previous generation's training continues in it
// (`next.continues`: it ended by machines leaving, being evicted or joining, in any mix, not by a
// restart of every machine). Every machine gets the same `continues`, and the machines that
// start workers for `next` start them joining (WriteGenerationFile), so kept and fresh workers
// always meet as survivors and joiners.
bool KeepsWorkers(const RendezvousResult& current, const RendezvousResult& next);

// Writes the generation file at `path` for `joined` (`local_world` workers on this machine):
// generation = joined.attempt, whose store namespace the workers' new group uses. `joining`:
// the workers about to start receive the training state from the running ones
// (docs/libaccel.md "In-place recovery"); false for kept workers and for a fresh start.
// `recover_timeout_ms`: how long the workers' recover() waits for the generation after it
// (RecoverTimeoutMs; 0: libaccel's connect deadline).
absl::Status WriteGenerationFile(const std::string& path, const RendezvousResult& joined,
                                 int local_world, bool joining,
                                 std::int64_t recover_timeout_ms = 0);

// Returns how long an in-place worker waits in recover() for the next generation, in ms: the
// rendezvous's `rdzv_timeout_s` (a replacement may take that long) and a margin (2 x kSilentLost)
// so that the launcher, not a worker's deadline, ends a job that no replacement joined.
std::int64_t RecoverTimeoutMs(double rdzv_timeout_s);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_IN_PLACE_H_
