// The rendezvous token file that `accel-launch config` writes next to a multi-machine config.
#ifndef ACCEL_LAUNCHER_COMMANDS_TOKEN_FILE_H_
#define ACCEL_LAUNCHER_COMMANDS_TOKEN_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "launcher/config/config.h"

namespace accel::launcher {

// The token file's name, in the config file's directory.
inline constexpr char kTokenFileName[] = "rdzv_token";

// For a multi-machine `config` without rdzv_token_file and not rdzv_insecure: writes (or keeps)
// the 0600 token file next to `config_path` (rendezvous::WriteTokenFile) and names it in
// `config` relative to the config file, so that copying both files is all another machine
// needs. Returns the token file's path, or "" when nothing was needed.
absl::StatusOr<std::string> AddTokenFile(const std::string& config_path, Config* config);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_COMMANDS_TOKEN_FILE_H_
