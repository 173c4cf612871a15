// The CLI11 adapter for launch options (CLI11's exceptions stop here).
// Every config key is a flag: --num_processes 2, --num-processes=2; booleans as --flag,
// --flag=false, --no-flag; accelerate's --cpu (= --use_cpu) and --multi_gpu
// (= --distributed_type MULTI_GPU); torchrun's and accelerate launch's own spellings
// (compat_flags.h); plus --config_file, --dry_run, -v/--verbose. The first argument that is not an
// option is the program; it and everything after it belong to the program.
#ifndef ACCEL_LAUNCHER_CLI_FLAGS_H_
#define ACCEL_LAUNCHER_CLI_FLAGS_H_

#include <string>
#include <utility>
#include <vector>

#include "launcher/config/diagnostics.h"
#include "launcher/config/source.h"

namespace accel::launcher {

struct LaunchArgs {
  std::string config_file;
  std::vector<FlagValue> flags;      // config values, in the order given (torchrun's translated)
  std::string nproc_per_node;        // torchrun's --nproc_per_node ("" = not given)
  std::vector<Diagnostic> problems;  // spellings that disagree, refused options
  std::vector<std::string> notices;  // spellings applied approximately or ignored
  std::vector<std::string> program;  // program path and its arguments
  bool module = false;               // -m: run the program as a Python module
  bool no_python = false;            // --no_python: exec the program as it is
  bool run_path = false;             // torchrun's --run_path: the program is a Python script
  bool torchrun_style = false;       // a torchrun-only option was given
  std::string role;                  // torchrun's --role ("" = default)
  bool dry_run = false;
  bool verbose = false;
  bool json = false;  // `env --json`
};

struct ParseOutcome {
  enum class Kind { kOk, kHelp, kError };
  Kind kind = Kind::kOk;
  std::string text;  // kHelp: the help text; kError: the message (one line, usage hint included)
};

// What a command accepts besides the config flags.
struct FlagSet {
  std::string name;  // "accel-launch", "accel-launch config validate", ...
  std::string description;
  bool program = true;      // a program and its arguments follow
  bool launch_only = true;  // --dry_run
  bool json = false;        // --json
  bool compat = false;      // torchrun's and accelerate launch's own spellings (compat_flags.h)
};

// Parses `args` (without the program name and subcommand words) into `out`.
ParseOutcome ParseLaunchArgs(const FlagSet& set, const std::vector<std::string>& args,
                             LaunchArgs* out);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CLI_FLAGS_H_
