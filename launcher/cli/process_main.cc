// Main(): RunCli over this process's streams, environment, devices and the real agent. Kept
// apart from cli.cc so that unit tests link RunCli without the agent library.
#include <iostream>

#include "absl/synchronization/mutex.h"
#include "common/logging.h"
#include "launcher/agent/plan.h"
#include "launcher/agent/rendezvous_token.h"
#include "launcher/cli/cli.h"

namespace accel::launcher {

int Main(int argc, char** argv) {
  // Debian builds abseil with mutex deadlock detection on: a global graph that every lock of
  // every absl::Mutex (gRPC's included) consults, a fifth of the rendezvous server's CPU with
  // thousands of machines joining (bench/README.md). Clang's -Wthread-safety checks our locking.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
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
  context.check_token = [](const Config& config, std::vector<std::string>* warnings) {
    absl::StatusOr<RendezvousToken> token = FindRendezvousToken(config, /*dry_run=*/true);
    if (!token.ok()) return token.status();
    *warnings = token->warnings;
    return absl::OkStatus();
  };
  context.effective_values = [](const Config& config) { return EffectiveConfig(config); };
  const int code = RunCli(args, context);
  std::cout.flush();
  return code;
}

}  // namespace accel::launcher
