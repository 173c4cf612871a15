// The CLI11 adapter for launch options (CLI11's exceptions stop here).
// Every config key is a flag: --num_processes 2, --num-processes=2; booleans as --flag,
// --flag=false, --no-flag; accelerate's --cpu (= --use_cpu) and --multi_gpu
// (= --distributed_type MULTI_GPU); plus --config_file, --dry_run, -v/--verbose. The first
// argument that is not an option is the program; it and everything after it belong to the program.
#ifndef ACCEL_LAUNCHER_CLI_FLAGS_H_
#define ACCEL_LAUNCHER_CLI_FLAGS_H_

#include <string>
#include <utility>
#include <vector>

namespace accel::launcher {

struct LaunchArgs {
  std::string config_file;
  std::vector<std::pair<std::string, std::string>> flags;  // (config key, text) as given
  std::vector<std::string> program;                        // program path and its arguments
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
};

// Parses `args` (without the program name and subcommand words) into `out`.
ParseOutcome ParseLaunchArgs(const FlagSet& set, const std::vector<std::string>& args,
                             LaunchArgs* out);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CLI_FLAGS_H_
