// In-place recovery under elastic membership (docs/libaccel.md "In-place recovery"): which
// generation changes a machine's running workers go on through, and the generation file
// (ACCEL_GENERATION_FILE, worker/src/elastic/generation.h) that tells them the new one.
#ifndef ACCEL_LAUNCHER_AGENT_IN_PLACE_H_
#define ACCEL_LAUNCHER_AGENT_IN_PLACE_H_

#include <string>

#include "absl/status/status.h"
#include "launcher/agent/plan.h"

namespace accel::launcher {

// The generation file's name in the run directory (one per machine and run).
inline constexpr char kGenerationFileName[] = "generation";

// Returns whether the workers running in generation `current` go on in place into `next`: only
// when machines left and none joined (a joiner's state transfer is not built: then every worker
// restarts). The answer is the same on every machine of `next` (the world and the membership
// change are the job's), so survivors never mix kept and restarted workers.
bool KeepsWorkers(const RendezvousResult& current, const RendezvousResult& next);

// Writes the generation file at `path` for `joined` (`local_world` workers on this machine):
// generation = joined.attempt, whose store namespace the workers' new group uses.
absl::Status WriteGenerationFile(const std::string& path, const RendezvousResult& joined,
                                 int local_world);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_IN_PLACE_H_
