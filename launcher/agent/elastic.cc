#include "launcher/agent/elastic.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace accel::launcher {

std::string FormatGenerationChange(const GenerationChange& change) {
  if (change.old_world == 0) {  // this machine's first generation: it is the one joining
    return absl::StrFormat(
        "membership: generation %d: %s; world %d (%d machine%s); restarts %d of %d; joined in "
        "%.2f s",
        change.generation, change.membership, change.new_world, change.machines,
        change.machines == 1 ? "" : "s", change.restart_count, change.max_restarts,
        absl::ToDoubleSeconds(change.took));
  }
  return absl::StrFormat(
      "membership: generation %d: %s; world %d -> %d (%d machine%s); restarts %d of %d; "
      "recovered in %.2f s",
      change.generation, change.membership, change.old_world, change.new_world, change.machines,
      change.machines == 1 ? "" : "s", change.restart_count, change.max_restarts,
      absl::ToDoubleSeconds(change.took));
}

std::string FormatEviction(int machine_rank, const std::string& host, int rank, bool failed) {
  return absl::StrCat("membership: machine ", machine_rank, " (host ", host.empty() ? "?" : host,
                      ") evicted: ",
                      failed ? absl::StrCat("its rank ", rank, " failed")
                             : absl::StrCat("the job's hang verdict names its rank ", rank),
                      "; the other machines go on without it");
}

std::string DescribeSpentBudget(int restart_count, int max_restarts) {
  if (max_restarts <= 0 || restart_count < max_restarts) return "";
  return absl::StrCat("restart budget spent: max_restarts ", max_restarts, ", ", restart_count,
                      " restarts used by the job (lost machines and failures count, on every "
                      "machine; machines joining do not)");
}

}  // namespace accel::launcher
