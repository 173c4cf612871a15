#include "launcher/agent/in_place.h"

#include "absl/strings/str_cat.h"
#include "worker/src/elastic/generation.h"

namespace accel::launcher {

bool KeepsWorkers(const RendezvousResult& current, const RendezvousResult& next) {
  return next.attempt > current.attempt && next.continues;
}

absl::Status WriteGenerationFile(const std::string& path, const RendezvousResult& joined,
                                 int local_world, bool joining) {
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
  std::string error;
  if (!worker::WriteGeneration(path, g, &error)) {
    return absl::InternalError(absl::StrCat("write generation file ", path, ": ", error));
  }
  return absl::OkStatus();
}

}  // namespace accel::launcher
