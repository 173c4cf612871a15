#include "launcher/agent/in_place.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/defaults.h"
#include "worker/src/elastic/generation.h"

namespace accel::launcher {

bool KeepsWorkers(const RendezvousResult& current, const RendezvousResult& next) {
  return next.attempt > current.attempt && next.continues;
}

std::int64_t RecoverTimeoutMs(double rdzv_timeout_s) {
  // A worker may begin waiting before its launcher has noticed the loss (a silent machine is
  // lost after kSilentLost); the launcher, which can say why no generation came, ends first.
  const auto margin = 2 * std::chrono::milliseconds(defaults::kSilentLost);
  return static_cast<std::int64_t>(rdzv_timeout_s * 1000) + margin.count();
}

absl::Status WriteGenerationFile(const std::string& path, const RendezvousResult& joined,
                                 int local_world, bool joining, std::int64_t recover_timeout_ms) {
  worker::Generation g;
  g.number = joined.attempt;
  g.world = joined.world_size;
  g.base_rank = joined.base_rank;
  g.group_rank = joined.group_rank;
  g.group_world = joined.group_world_size;
  g.local_world = local_world;
  g.store_attempt = joined.attempt;
  g.master_port = joined.master_port;
  g.joining = joining;
  g.recover_timeout_ms = recover_timeout_ms;
  std::string error;
  if (!worker::WriteGeneration(path, g, &error)) {
    return absl::InternalError(absl::StrCat("write generation file ", path, ": ", error));
  }
  return absl::OkStatus();
}

}  // namespace accel::launcher
