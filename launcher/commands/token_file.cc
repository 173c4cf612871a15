#include "launcher/commands/token_file.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "rendezvous/grpc/token.h"

namespace accel::launcher {

absl::StatusOr<std::string> AddTokenFile(const std::string& config_path, Config* config) {
  if (config->num_machines <= 1 || !config->rdzv_token_file.empty() || config->rdzv_insecure) {
    return std::string();
  }
  const std::size_t slash = config_path.find_last_of('/');
  const std::string path = slash == std::string::npos
                               ? std::string(kTokenFileName)
                               : absl::StrCat(config_path.substr(0, slash + 1), kTokenFileName);
  if (slash != std::string::npos && slash > 0) {
    std::error_code error;
    std::filesystem::create_directories(config_path.substr(0, slash), error);
    if (error) {
      return absl::InternalError(
          absl::StrCat("create directory ", config_path.substr(0, slash), ": ", error.message()));
    }
  }
  absl::StatusOr<std::string> token = rendezvous::WriteTokenFile(path);
  if (!token.ok()) return Annotate(token.status(), "write the rendezvous token file");
  return path;
}

}  // namespace accel::launcher
