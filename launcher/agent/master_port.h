// CheckMasterPort: main_process_port on one machine is MASTER_PORT, the port a torch script's
// c10d store binds (as under `accelerate launch`); it is checked before anything starts, so that
// a port in use is a clear rendezvous failure, not a worker's stack trace.
#ifndef ACCEL_LAUNCHER_AGENT_MASTER_PORT_H_
#define ACCEL_LAUNCHER_AGENT_MASTER_PORT_H_

#include <string>

#include "absl/status/status.h"
#include "launcher/agent/plan.h"

namespace accel::launcher {

// Returns OK unless the plan's fixed MASTER_PORT (there only when the workers get torchrun's
// variables) is in use on `host`: then FAILED_PRECONDITION "rendezvous: main_process_port N is
// MASTER_PORT on this machine, but port N on HOST is in use (...)". Binds and closes a socket;
// does not block.
absl::Status CheckMasterPort(const LaunchPlan& plan, const std::string& host);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_MASTER_PORT_H_
