// Main(): RunCli over this process's streams, environment, devices and the real agent. Kept
// apart from cli.cc so that unit tests link RunCli without the agent library.
#include <iostream>

#include "common/logging.h"
#include "launcher/agent/plan.h"
#include "launcher/cli/cli.h"

namespace accel::launcher {

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  CliContext context;
  context.init_logging = [](bool verbose) { InitLogging(verbose); };
  context.in = &std::cin;
  context.out = &std::cout;
  context.err = &std::cerr;
  context.env = ProcessEnvironment();
  context.count_gpus = [](std::string* why) { return CountGpus(why); };
  context.detect_devices = [] { return DetectDevices(); };
  context.run_agent = [](const LaunchRequest& request) { return RunAgent(request); };
  context.effective_values = [](const Config& config) { return EffectiveConfig(config); };
  const int code = RunCli(args, context);
  std::cout.flush();
  return code;
}

}  // namespace accel::launcher
