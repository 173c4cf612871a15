#include "launcher/agent/rendezvous_token.h"

#include "absl/strings/str_cat.h"
#include "common/env_contract.h"
#include "common/env_reader.h"
#include "common/seconds.h"
#include "common/status_macros.h"
#include "launcher/config/slurm_token.h"
#include "rendezvous/grpc/token.h"

namespace accel::launcher {

absl::StatusOr<std::optional<RendezvousToken>> TokenFromScheduler(const Config& config,
                                                                  bool dry_run) {
  // ===== SCHEDULER-PROVIDED TOKENS: the one place they are taken. =====
  // Slurm: a step with PMI-2 exchanges a fresh token over it (launcher/config/slurm_token.h).
  // A dry run does not exchange (the other tasks would wait in the fence); it says where the
  // token will come from.
  const EnvLookup env = ProcessEnvironment();
  if (dry_run) {
    if (!env("SLURM_JOB_ID").has_value() || !env("PMI_FD").has_value()) return std::nullopt;
    RendezvousToken out;
    out.source = "exchanged over Slurm's PMI-2 at launch";
    return out;
  }
  const absl::Time deadline = absl::Now() + absl::FromChrono(FromSeconds(config.rdzv_timeout_s));
  absl::StatusOr<std::optional<SchedulerToken>> slurm = SlurmStepToken(env, deadline);
  if (!slurm.ok()) return slurm.status();
  if (!slurm->has_value()) return std::nullopt;
  RendezvousToken out;
  out.token = (*slurm)->token;
  out.source = (*slurm)->source;
  return out;
}

absl::StatusOr<RendezvousToken> FindRendezvousToken(const Config& config, bool dry_run) {
  RendezvousToken out;
  if (const char* token = env::Get(env::kRdzvToken); token != nullptr) {
    if (absl::Status strong = rendezvous::CheckTokenStrength(token, env::kRdzvToken);
        !strong.ok()) {
      return strong;
    }
    out.token = token;
    out.source = env::kRdzvToken;
    return out;
  }
  if (!config.rdzv_token_file.empty()) {
    absl::StatusOr<rendezvous::TokenFile> file = rendezvous::ReadTokenFile(config.rdzv_token_file);
    if (!file.ok()) return file.status();
    out.token = std::move(file->token);
    out.source = absl::StrCat("rdzv_token_file ", config.rdzv_token_file);
    return out;
  }
  if (config.num_machines == 1) {
    absl::StatusOr<std::string> token = rendezvous::GenerateToken();
    if (!token.ok()) return token.status();
    out.token = *std::move(token);
    out.source = "generated for this job";
    return out;
  }
  absl::StatusOr<std::optional<RendezvousToken>> scheduler = TokenFromScheduler(config, dry_run);
  if (!scheduler.ok()) return scheduler.status();
  if (scheduler->has_value()) return **std::move(scheduler);
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
      "it writes a token file, rdzv_token, next to the config file, where every launch "
      "finds it; copy both files to every machine. Or point rdzv_token_file (or ACCEL_RDZV_TOKEN) "
      "at a secret "
      "every machine shares. To run without one, set rdzv_insecure: true."));
}

}  // namespace accel::launcher
