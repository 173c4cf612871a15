// The network preflight on this machine (`--preflight`, `accel-launch preflight`): after the
// machines joined an attempt, the agent starts accel-preflight (launcher/preflight, found beside
// the running accel-launch) with the job's store, token, transport (Gloo on CPU, NCCL on GPU) and
// bucket size, waits for it (defaults::kPreflightTimeout; a signal to the launcher ends it and
// the launcher), and reads the job's result. Every machine gets the same result, so every machine
// reaches the same verdict: machine 0 prints the matrix, the others one line; a slow link fails
// the launch under `strict`.
#ifndef ACCEL_LAUNCHER_AGENT_PREFLIGHT_RUN_H_
#define ACCEL_LAUNCHER_AGENT_PREFLIGHT_RUN_H_

#include <string>

#include "absl/status/statusor.h"
#include "launcher/agent/plan.h"
#include "launcher/config/config.h"
#include "launcher/preflight/link_matrix.h"
#include "launcher/process/signals.h"

namespace accel::launcher {

struct PreflightLaunch {
  const Config* config = nullptr;
  const LaunchPlan* plan = nullptr;
  const RendezvousResult* joined = nullptr;
  std::string scratch_dir;  // where the helper writes its result
  const SignalFd* signals = nullptr;
};

// Returns the path of accel-preflight beside this executable.
absl::StatusOr<std::string> PreflightHelperPath();

// Runs the helper and returns the job's result.
absl::StatusOr<PreflightResult> RunPreflight(const PreflightLaunch& launch);

// Prints the result (machine 0: the report; others: one line). Returns false when a link is slow
// and the config is strict: the launch must stop.
bool ReportPreflight(const PreflightResult& result, const Config& config, int machine_rank);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_PREFLIGHT_RUN_H_
