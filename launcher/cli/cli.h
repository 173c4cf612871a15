// accel-launch's command line: dispatch to launch, config, config default, config validate, env,
// status, report and preflight. Main() wires the real process (stdin/stdout/stderr, environment,
// devices, the agent); RunCli() takes them injected so that every command is unit-testable.
//
//   accel-launch [launch] [options] PROGRAM [ARGS...]   launch
//   accel-launch config [--config_file F]               questionnaire, writes a config file
//   accel-launch config default [--config_file F]       the same without questions
//   accel-launch config validate [options]              problems, or "ok" + resolved config
//   accel-launch env [--json] [--config_file F]         versions, devices, config in effect
//   accel-launch status [RUN_DIR] [--json] [options]    every rank of a running job
//   accel-launch report LOG_DIR [--output PNG]          heat map of the ranks' step times
//   accel-launch preflight [options]                    measure the links between machines
//
// Exit codes (common/exit_codes.h): 0 ok, 2 usage or config error (nothing launched), otherwise
// the agent's code.
#ifndef ACCEL_LAUNCHER_CLI_CLI_H_
#define ACCEL_LAUNCHER_CLI_CLI_H_

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/device_info.h"
#include "launcher/agent/agent.h"
#include "launcher/config/source.h"
#include "launcher/config/writer.h"

namespace accel::launcher {

struct CliContext {
  std::istream* in = nullptr;
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  EnvLookup env;
  std::function<int(std::string* why)> count_gpus;
  std::function<DeviceReport()> detect_devices;
  std::function<int(const LaunchRequest&)> run_agent;
  // `config validate`'s check of the rendezvous token launch would use (FindRendezvousToken,
  // dry run): its error, and warnings to show. Unset: not checked.
  std::function<absl::Status(const Config&, std::vector<std::string>* warnings)> check_token;
  // The values a launch of `config` would really use where fallbacks change them (`config
  // validate` shows them); may be empty.
  std::function<EffectiveValues(const Config&)> effective_values;
  std::function<void(bool verbose)> init_logging;  // called once the flags are parsed
  bool detect_scheduler = true;
};

// Runs one command; `args` excludes the binary name. Returns the exit code.
int RunCli(const std::vector<std::string>& args, const CliContext& context);

// Runs accel-launch in this process: RunCli over the real streams, environment and agent.
int Main(int argc, char** argv);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CLI_CLI_H_
