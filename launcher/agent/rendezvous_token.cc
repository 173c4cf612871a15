#include "launcher/agent/rendezvous_token.h"

#include "absl/strings/str_cat.h"
#include "common/env_contract.h"
#include "common/env_reader.h"
#include "common/status_macros.h"
#include "rendezvous/grpc/token.h"

namespace accel::launcher {

std::optional<std::string> SchedulerToken(const Config& /*config*/) {
  // SCHEDULER TOKEN SOURCES GO HERE (e.g. Slurm): return the job's token when the scheduler
  // provides one that every machine of the job sees, nullopt otherwise.
  return std::nullopt;
}

absl::StatusOr<RendezvousToken> FindRendezvousToken(const Config& config) {
  RendezvousToken out;
  if (const char* token = env::Get(env::kRdzvToken); token != nullptr) {
    out.token = token;
    out.source = env::kRdzvToken;
    return out;
  }
  if (!config.rdzv_token_file.empty()) {
    absl::StatusOr<rendezvous::TokenFile> file =
        rendezvous::ReadTokenFile(config.rdzv_token_file, config.strict);
    if (!file.ok()) return file.status();
    if (!file->warning.empty()) out.warnings.push_back(file->warning);
    out.token = std::move(file->token);
    out.source = absl::StrCat("rdzv_token_file ", config.rdzv_token_file);
    return out;
  }
  if (std::optional<std::string> token = SchedulerToken(config); token.has_value()) {
    out.token = *std::move(token);
    out.source = "the scheduler";
    return out;
  }
  if (config.num_machines == 1) {
    absl::StatusOr<std::string> token = rendezvous::GenerateToken();
    if (!token.ok()) return token.status();
    out.token = *std::move(token);
    out.source = "generated for this job";
    return out;
  }
  const std::string endpoint = absl::StrCat(config.main_process_ip, ":", config.main_process_port);
  if (config.rdzv_insecure) {
    out.source = "none (rdzv_insecure: true)";
    out.warnings.push_back(absl::StrCat(
        "rdzv_insecure: true: the rendezvous on ", endpoint,
        " has no token; anyone who reaches it can join the job, read and write its store and "
        "abort it"));
    return out;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "a job on ", config.num_machines,
      " machines needs a rendezvous token, and none is configured (without one anyone who "
      "reaches ",
      endpoint,
      " could join the job, read and write its store and abort it). Run `accel-launch config`: "
      "it writes a token file next to the config file and names it in rdzv_token_file; copy "
      "both files to every machine. Or point rdzv_token_file (or ACCEL_RDZV_TOKEN) at a secret "
      "every machine shares. To run without one, set rdzv_insecure: true."));
}

}  // namespace accel::launcher
