// The per-machine agent: plan → rendezvous → spawn → supervise → report.
#ifndef ACCEL_LAUNCHER_AGENT_AGENT_H_
#define ACCEL_LAUNCHER_AGENT_AGENT_H_

#include <string>
#include <vector>

#include "launcher/config/config.h"

namespace accel::launcher {

struct LaunchRequest {
  Config config;                  // resolved and validated (CLI > env > file > default)
  std::string config_path;        // where it came from ("" = defaults), for messages
  std::vector<std::string> argv;  // the program and its arguments, as given
  bool module = false;            // -m: argv[0] is a Python module (python -m argv...)
  bool no_python = false;         // --no_python: exec argv[0] as it is, even a .py
  bool run_path = false;          // torchrun's --run_path: argv[0] is a Python script
  bool torchrun_style = false;    // torchrun options given: one process still gets RANK etc.
  std::string role;               // ROLE_NAME ("" = default)
  // The user set gradient_accumulation_steps (file, variable or option): the workers get
  // ACCELERATE_GRADIENT_ACCUMULATION_STEPS, which overrides a script's own value.
  bool set_gradient_accumulation = false;
  // The user set hang_timeout (file, variable or option): a one-process job is watched too (it
  // then runs supervised, its output through pipes, instead of on the terminal).
  bool set_hang_timeout = false;
  bool dry_run = false;         // print the plan and exit 0 without starting anything
  bool preflight_only = false;  // `accel-launch preflight`: measure the links, start no program
};

// Runs one launch on this machine. Returns the process exit code (common/exit_codes.h): kExitOk,
// kExitWorkerFailed (a worker failed), kExitUsage, kExitRendezvous, or ExitCodeForSignal(N) when
// interrupted by signal N.
int RunAgent(const LaunchRequest& request);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_AGENT_H_
