#include "launcher/commands/token_command.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/exit_codes.h"
#include "common/safe_open.h"
#include "launcher/config/loader.h"
#include "launcher/config/resolve.h"
#include "rendezvous/grpc/token.h"

namespace accel::launcher {
namespace {

constexpr char kUsage[] =
    "usage: accel-launch token [FILE] [--config_file CONFIG] [--force]\n"
    "Write a fresh random 256-bit rendezvous token to FILE (default: rdzv_token beside the\n"
    "config file in effect, where every launch finds it), readable by you only (0600).\n"
    "An existing token is kept unless --force.\n";

// The default file: rdzv_token beside the config a launch would read (or would be written by
// `accel-launch config`).
std::string DefaultTokenPath(const std::string& config_flag, const EnvLookup& env) {
  ConfigLookup lookup = FindConfigFile(config_flag, env);
  std::string config = lookup.path;
  if (config.empty()) config = AccelerateDefaultConfigPath(env);
  const std::size_t slash = config.find_last_of('/');
  return slash == std::string::npos ? std::string(kTokenFileName)
                                    : config.substr(0, slash + 1) + kTokenFileName;
}

}  // namespace

int RunTokenCommand(const std::vector<std::string>& args, const EnvLookup& env, std::ostream& out,
                    std::ostream& err) {
  std::string path, config_flag;
  bool force = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      out << kUsage;
      return kExitOk;
    }
    if (a == "--force") {
      force = true;
    } else if (a == "--config_file" && i + 1 < args.size()) {
      config_flag = args[++i];
    } else if (a.rfind("--config_file=", 0) == 0) {
      config_flag = a.substr(14);
    } else if (path.empty() && !a.empty() && a[0] != '-') {
      path = a;
    } else {
      err << "accel-launch token: unexpected argument '" << a << "'\n" << kUsage;
      return kExitUsage;
    }
  }
  if (path.empty()) path = DefaultTokenPath(config_flag, env);
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0 && st.st_size > 0;
  if (exists && !force) {
    absl::StatusOr<rendezvous::TokenFile> kept = rendezvous::ReadTokenFile(path);
    if (!kept.ok()) {
      err << "accel-launch token: " << kept.status().message()
          << " (--force writes a fresh token over it)\n";
      return kExitUsage;
    }
    out << "kept the token in " << path
        << " (every machine's copy must match it; --force writes a fresh one)\n";
    return kExitOk;
  }
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code error;
    std::filesystem::create_directories(parent, error);
    if (error) {
      err << "accel-launch token: create directory " << parent.string() << ": " << error.message()
          << "\n";
      return kExitUsage;
    }
  }
  absl::StatusOr<std::string> token = rendezvous::GenerateToken();
  if (!token.ok()) {
    err << "accel-launch token: " << token.status().message() << "\n";
    return kExitUsage;
  }
  if (const int e = safe_open::ReplaceFile(path, *token + "\n", 0600); e != 0) {
    err << "accel-launch token: write " << path << ": " << std::strerror(e) << "\n";
    return kExitUsage;
  }
  out << (exists ? "replaced the token in " : "wrote a random 256-bit token to ") << path
      << " (mode 0600)\n"
      << "Hand it to the other machines of the job, by a channel you trust:\n"
      << "  - copy it beside each machine's config file (e.g. scp -p " << path << " HOST:" << path
      << "), or name it in the config (rdzv_token_file: PATH) or in\n"
      << "    ACCEL_RDZV_TOKEN;\n"
      << "  - under Slurm (srun, PMI-2) nothing is needed: the job's launchers exchange a fresh\n"
      << "    token over the scheduler; under mpirun pass the variable (-x ACCEL_RDZV_TOKEN).\n";
  if (exists) out << "Every machine needs the new token before its next launch.\n";
  return kExitOk;
}

}  // namespace accel::launcher
