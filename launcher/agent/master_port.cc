#include "launcher/agent/master_port.h"

#include "absl/strings/str_cat.h"
#include "common/net.h"

namespace accel::launcher {

absl::Status CheckMasterPort(const LaunchPlan& plan, const std::string& host) {
  if (plan.fixed_master_port <= 0 || !plan.torchrun_env) return absl::OkStatus();
  const absl::Status free = CheckPortFree(host, plan.fixed_master_port);
  if (free.ok()) return free;
  return absl::FailedPreconditionError(
      absl::StrCat("rendezvous: main_process_port ", plan.fixed_master_port,
                   " is MASTER_PORT on this machine, but ", free.message(),
                   " (choose another port, or 0 for a free one)"));
}

}  // namespace accel::launcher
