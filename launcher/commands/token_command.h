// `accel-launch token [FILE] [--config_file CONFIG] [--force]`: writes a fresh random 256-bit
// rendezvous token to FILE (default: rdzv_token beside the config file in effect, where every
// launch finds it), owner-only (0600), and prints how to hand it to the other machines.
// An existing token is kept unless --force (the other machines' copies must match it).
#ifndef ACCEL_LAUNCHER_COMMANDS_TOKEN_COMMAND_H_
#define ACCEL_LAUNCHER_COMMANDS_TOKEN_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

#include "launcher/config/source.h"

namespace accel::launcher {

// Runs the command; `args` follow "token". Returns the exit code (kExitOk, kExitUsage).
int RunTokenCommand(const std::vector<std::string>& args, const EnvLookup& env, std::ostream& out,
                    std::ostream& err);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_COMMANDS_TOKEN_COMMAND_H_
