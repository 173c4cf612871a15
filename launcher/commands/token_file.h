// The rendezvous token file that `accel-launch config` writes next to a multi-machine config.
#ifndef ACCEL_LAUNCHER_COMMANDS_TOKEN_FILE_H_
#define ACCEL_LAUNCHER_COMMANDS_TOKEN_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "launcher/config/config.h"
#include "launcher/config/loader.h"

namespace accel::launcher {

// For a multi-machine `config` without rdzv_token_file and not rdzv_insecure: writes (or keeps)
// the 0600 token file kTokenFileName next to `config_path` (rendezvous::WriteTokenFile). The
// config does not name it (accelerate refuses keys it does not know): a launch finds it beside
// the config file, so copying both files is all another machine needs. Returns the token
// file's path, or "" when nothing was needed.
absl::StatusOr<std::string> AddTokenFile(const std::string& config_path, Config* config);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_COMMANDS_TOKEN_FILE_H_
