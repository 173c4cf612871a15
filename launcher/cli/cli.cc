#include "launcher/cli/cli.h"

#include <istream>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/defaults.h"
#include "common/exit_codes.h"
#include "common/logging.h"
#include "common/version.h"
#include "launcher/cli/flags.h"
#include "launcher/commands/env_report.h"
#include "launcher/commands/questionnaire.h"
#include "launcher/commands/report_command.h"
#include "launcher/commands/status_command.h"
#include "launcher/commands/token_command.h"
#include "launcher/commands/token_file.h"
#include "launcher/config/resolve.h"
#include "launcher/config/schema.h"
#include "launcher/config/validate.h"
#include "launcher/config/values.h"
#include "launcher/config/writer.h"

namespace accel::launcher {
namespace {

constexpr char kUsage[] =
    "usage: accel-launch [launch] [options] PROGRAM [ARGS...]\n"
    "       accel-launch config [--config_file F]          answer questions, write a config\n"
    "       accel-launch config default [--config_file F] [options]  write the config for this\n"
    "                                                   machine (options: any config key)\n"
    "       accel-launch config validate [options]         check the config, print it resolved\n"
    "       accel-launch env [--json] [--config_file F]    versions, devices, config in effect\n"
    "       accel-launch status [RUN_DIR] [--run_id ID] [--json] [options]\n"
    "                                                      every rank of a running job\n"
    "       accel-launch report LOG_DIR [--output PNG]     heat map of the ranks' step times\n"
    "       accel-launch preflight [options]               measure the links between machines\n"
    "       accel-launch token [FILE] [--force]            write a random 256-bit token file\n"
    "       accel-launch --version\n"
    "Every config key is also an option (--num_processes 2, --mixed_precision fp16, ...);\n"
    "`accel-launch launch --help` lists them all.\n";

std::vector<std::string> Tail(const std::vector<std::string>& args, size_t from) {
  return std::vector<std::string>(args.begin() + static_cast<long>(std::min(from, args.size())),
                                  args.end());
}

// Parses flags; prints help or the error. Returns -1 to continue, else the exit code.
int Parse(const FlagSet& set, const std::vector<std::string>& args, const CliContext& context,
          LaunchArgs* out) {
  const ParseOutcome outcome = ParseLaunchArgs(set, args, out);
  if (outcome.kind == ParseOutcome::Kind::kHelp) {
    *context.out << outcome.text;
    return kExitOk;
  }
  if (outcome.kind == ParseOutcome::Kind::kError) {
    *context.err << "accel-launch: " << outcome.text << "\n";
    return kExitUsage;
  }
  if (context.init_logging) context.init_logging(out->verbose);
  return -1;
}

ResolvedConfig Resolve(const LaunchArgs& args, const CliContext& context) {
  ResolveOptions options;
  options.config_file = args.config_file;
  options.flags = args.flags;
  options.nproc_per_node = args.nproc_per_node;
  options.flag_problems = args.problems;
  options.env = context.env;
  options.count_gpus = context.count_gpus;
  options.detect_scheduler = context.detect_scheduler;
  ResolvedConfig resolved = ResolveConfig(options);
  resolved.notices.insert(resolved.notices.begin(), args.notices.begin(), args.notices.end());
  return resolved;
}

// Prints notices; with problems prints them all and returns false.
bool Report(const ResolvedConfig& resolved, const CliContext& context, absl::string_view what) {
  for (const std::string& notice : resolved.notices) {
    *context.err << kLogPrefix << notice << "\n";
  }
  if (resolved.problems.empty()) return true;
  *context.err << FormatDiagnostics(resolved.problems)
               << "accel-launch: " << resolved.problems.size()
               << (resolved.problems.size() == 1 ? " problem" : " problems")
               << " in the configuration; " << what << "\n";
  return false;
}

// accelerate's plugins are read by HF accelerate's Accelerator in a Python script; a program
// exec'ed directly is a libaccel program (unless --no_python says the user wants accelerate's
// environment for it anyway). Returns the one error for such a program, or "".
std::string PluginForLibaccel(const Config& config, const LaunchArgs& parsed) {
  const std::string& program = parsed.program.front();
  const bool python = parsed.module || parsed.run_path || parsed.no_python ||
                      (program.size() > 3 && program.compare(program.size() - 3, 3, ".py") == 0);
  if (python || config.use_cpu) return "";
  std::vector<std::string> asked;
  if (!config.accelerate_plugin.empty()) {
    asked.push_back(absl::StrCat("distributed_type ", config.accelerate_plugin));
  }
  if (config.fp8) asked.push_back("mixed_precision fp8");
  if (config.use_parallelism_config) asked.push_back("parallelism_config");
  if (asked.empty()) return "";
  return absl::StrCat(
      absl::StrJoin(asked, ", "), " is for Python scripts (HF accelerate's Accelerator reads it); ",
      program,
      " is run as a libaccel program, and libaccel supports distributed_type NO, MULTI_GPU or "
      "MULTI_CPU (DDP) with mixed_precision no, fp16 or bf16: use one of those for it, or "
      "--no_python to give it accelerate's environment anyway");
}

int Launch(const std::vector<std::string>& args, const CliContext& context) {
  FlagSet set{"accel-launch launch", "Launch PROGRAM on this machine's share of the job."};
  set.compat = true;
  LaunchArgs parsed;
  if (int code = Parse(set, args, context, &parsed); code >= 0) return code;
  if (parsed.program.empty()) {
    *context.err << "accel-launch: no program to launch\n" << kUsage;
    return kExitUsage;
  }
  ResolvedConfig resolved = Resolve(parsed, context);
  if (!Report(resolved, context, "nothing was launched")) return kExitUsage;
  if (const std::string why = PluginForLibaccel(resolved.config, parsed); !why.empty()) {
    *context.err << "accel-launch: " << why << "\naccel-launch: nothing was launched\n";
    return kExitUsage;
  }
  auto precision = resolved.sources.find("mixed_precision");
  resolved.config.mixed_precision_from_file =
      precision != resolved.sources.end() && precision->second.kind == ValueOrigin::Kind::kFile;
  LaunchRequest request;
  request.config = std::move(resolved.config);
  request.config_path = resolved.path;
  request.argv = std::move(parsed.program);
  request.module = parsed.module;
  request.no_python = parsed.no_python;
  request.run_path = parsed.run_path;
  request.torchrun_style = parsed.torchrun_style;
  request.role = parsed.role;
  auto accumulation = resolved.sources.find("gradient_accumulation_steps");
  request.set_gradient_accumulation = accumulation != resolved.sources.end() &&
                                      accumulation->second.kind != ValueOrigin::Kind::kDefault &&
                                      accumulation->second.kind != ValueOrigin::Kind::kHardware;
  auto hang = resolved.sources.find("hang_timeout");
  request.set_hang_timeout = hang != resolved.sources.end() &&
                             hang->second.kind != ValueOrigin::Kind::kDefault &&
                             hang->second.kind != ValueOrigin::Kind::kHardware;
  request.dry_run = parsed.dry_run;
  return context.run_agent(request);
}

int Validate(const std::vector<std::string>& args, const CliContext& context) {
  FlagSet set{"accel-launch config validate",
              "Check the config in effect (file, ACCEL_* variables, options) and print it.",
              /*program=*/false, /*launch_only=*/false};
  set.compat = true;
  LaunchArgs parsed;
  if (int code = Parse(set, args, context, &parsed); code >= 0) return code;
  const ResolvedConfig resolved = Resolve(parsed, context);
  if (!Report(resolved, context, "nothing would be launched")) return kExitUsage;
  // The token check launch makes before it starts anything: a multi-machine job needs one.
  std::vector<std::string> warnings;
  if (resolved.config.num_machines > 1 && context.check_token) {
    if (const absl::Status token = context.check_token(resolved.config, &warnings); !token.ok()) {
      *context.err << "accel-launch: rendezvous token: " << token.message()
                   << "\naccel-launch: nothing would be launched\n";
      return kExitUsage;
    }
  }
  for (const std::string& warning : warnings) {
    *context.err << kLogPrefix << "warning: " << warning << "\n";
  }
  // What the launch would run after its fallbacks (no GPU → CPU, fp16 on CPU → fp32, ...).
  const EffectiveValues effective =
      context.effective_values ? context.effective_values(resolved.config) : EffectiveValues{};
  *context.out << "ok: "
               << (resolved.path.empty() ? "no config file, defaults for this machine"
                                         : resolved.path)
               << "\n"
               << FormatResolvedConfig(resolved.config, resolved.sources, effective);
  return kExitOk;
}

// Where `config` and `config default` write: --config_file, else accelerate's default path.
// A multi-machine config gets a token file beside it (launcher/commands/token_file.h).
int WriteConfig(const LaunchArgs& parsed, Config config, const CliContext& context) {
  std::string path = parsed.config_file;
  if (path.empty()) path = AccelerateDefaultConfigPath(context.env);
  if (path.empty()) {
    *context.err << "accel-launch: neither HOME nor HF_HOME is set; use --config_file\n";
    return kExitUsage;
  }
  const absl::StatusOr<std::string> token_file = AddTokenFile(path, &config);
  if (!token_file.ok()) {
    *context.err << "accel-launch: " << token_file.status().message() << "\n";
    return kExitWorkerFailed;
  }
  const absl::Status status = WriteConfigFile(path, ToConfigYaml(config));
  if (!status.ok()) {
    *context.err << "accel-launch: write config file " << path << ": " << status.message() << "\n";
    return kExitWorkerFailed;
  }
  *context.out << "accel-launch: configuration saved at " << path << "\n";
  if (!token_file->empty()) {
    *context.out << "accel-launch: rendezvous token saved at " << *token_file
                 << " (mode 0600; the config names it): copy both files to every machine\n";
  }
  const ConfigLookup lookup = FindConfigFile("", context.env);
  if (parsed.config_file.empty() && !lookup.path.empty() && lookup.path != path) {
    *context.out << "note: " << lookup.path
                 << " is looked up first and takes precedence over this file\n";
  }
  return kExitOk;
}

// Applies `config default`'s options (any config key, e.g. --num_machines 2 --main_process_ip
// 10.0.0.1) over the hardware defaults; a multi-machine config gets the default port. Prints
// every problem and returns false when the result is not a valid config.
bool ApplyDefaultOptions(const LaunchArgs& parsed, const CliContext& context, Config* config) {
  std::vector<Diagnostic> problems;
  for (const FlagValue& flag : parsed.flags) {
    const KeySpec* spec = FindKey(flag.key);
    const absl::Status status = spec == nullptr ? absl::InvalidArgumentError("unknown key")
                                                : spec->set(ScalarValue(flag.text), config);
    if (!status.ok()) {
      Diagnostic d;
      d.where =
          flag.spelling.empty() ? absl::StrCat("--", flag.key, " ", flag.text) : flag.spelling;
      d.message = std::string(status.message());
      problems.push_back(std::move(d));
    }
  }
  if (config->num_machines > 1 && config->main_process_port == 0) {
    config->main_process_port = defaults::kMainProcessPort;
  }
  if (problems.empty()) problems = ValidateConfig(*config, SourceMap{});
  if (problems.empty()) return true;
  *context.err << FormatDiagnostics(problems) << "accel-launch: nothing was written\n";
  return false;
}

int ConfigCommand(const std::vector<std::string>& args, const CliContext& context) {
  const std::string sub = args.empty() ? "" : args.front();
  if (sub == "validate") return Validate(Tail(args, 1), context);
  const bool defaults = sub == "default";
  FlagSet set{defaults ? "accel-launch config default" : "accel-launch config",
              defaults ? "Write the config for this machine's hardware without questions."
                       : "Answer accelerate's questions and write a config file.",
              /*program=*/false, /*launch_only=*/false};
  LaunchArgs parsed;
  if (int code = Parse(set, defaults ? Tail(args, 1) : args, context, &parsed); code >= 0) {
    return code;
  }
  if (!parsed.flags.empty() && !defaults) {
    *context.err << "accel-launch: " << set.name << " takes only --config_file\n";
    return kExitUsage;
  }
  if (defaults) {
    std::string why;
    const int gpus = context.count_gpus ? context.count_gpus(&why) : 0;
    Config config = DefaultsForHardware(gpus);
    config.use_cpu = gpus == 0;  // as `accelerate config default` writes it
    if (!ApplyDefaultOptions(parsed, context, &config)) return kExitUsage;
    return WriteConfig(parsed, config, context);
  }
  const DeviceReport devices = context.detect_devices ? context.detect_devices() : DeviceReport{};
  absl::StatusOr<Config> config = RunQuestionnaire(*context.in, *context.out, devices.gpus);
  if (!config.ok()) {
    *context.err << "accel-launch: config: " << config.status().message() << "\n";
    return kExitUsage;
  }
  return WriteConfig(parsed, *config, context);
}

int EnvCommand(const std::vector<std::string>& args, const CliContext& context) {
  FlagSet set{"accel-launch env", "Print versions, devices and the config in effect.",
              /*program=*/false, /*launch_only=*/false, /*json=*/true};
  LaunchArgs parsed;
  if (int code = Parse(set, args, context, &parsed); code >= 0) return code;
  const ResolvedConfig resolved = Resolve(parsed, context);
  const DeviceReport devices = context.detect_devices ? context.detect_devices() : DeviceReport{};
  const HostFacts host = GatherHostFacts();
  *context.out << (parsed.json ? FormatEnvReportJson(host, devices, resolved)
                               : FormatEnvReport(host, devices, resolved));
  return kExitOk;
}

int StatusCommand(const std::vector<std::string>& args, const CliContext& context) {
  FlagSet set{"accel-launch status",
              "Show every rank of a running job (from any machine of it). RUN_DIR: its run "
              "directory; else --run_id, or the one running job found.",
              /*program=*/true, /*launch_only=*/false, /*json=*/true};
  CliContext parse_only = context;  // logging starts once, after both parts are parsed
  parse_only.init_logging = nullptr;
  LaunchArgs parsed;
  if (int code = Parse(set, args, parse_only, &parsed); code >= 0) return code;
  if (parsed.program.size() > 1) {  // options after RUN_DIR: `status RUN_DIR --json`
    set.program = false;
    LaunchArgs after;
    const std::vector<std::string> rest(parsed.program.begin() + 1, parsed.program.end());
    if (int code = Parse(set, rest, parse_only, &after); code >= 0) return code;
    parsed.program.resize(1);
    parsed.flags.insert(parsed.flags.end(), after.flags.begin(), after.flags.end());
    parsed.json = parsed.json || after.json;
    parsed.verbose = parsed.verbose || after.verbose;
    if (!after.config_file.empty()) parsed.config_file = after.config_file;
  }
  if (context.init_logging) context.init_logging(parsed.verbose);
  StatusRequest request;
  request.run_dir = parsed.program.empty() ? "" : parsed.program.front();
  request.config = Resolve(parsed, context).config;  // only where to look and the token
  request.json = parsed.json;
  request.env = context.env;
  return RunStatusCommand(request, *context.out, *context.err);
}

int ReportCommand(const std::vector<std::string>& args, const CliContext& context) {
  ReportRequest request;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-h" || args[i] == "--help") {
      *context.out << "usage: accel-launch report LOG_DIR [--output PNG]\n"
                      "Draw the heat map (ranks x time) of the ranks' own work per step from "
                      "LOG_DIR's step_times.csv (a run directory, or the newest run in a log "
                      "directory).\n";
      return kExitOk;
    }
    if ((args[i] == "--output" || args[i] == "-o") && i + 1 < args.size()) {
      request.output = args[++i];
    } else if (args[i].rfind("--output=", 0) == 0) {
      request.output = args[i].substr(9);
    } else if (request.log_dir.empty() && !args[i].empty() && args[i][0] != '-') {
      request.log_dir = args[i];
    } else {
      *context.err << "accel-launch report: unexpected argument '" << args[i]
                   << "' (usage: accel-launch report LOG_DIR [--output PNG])\n";
      return kExitUsage;
    }
  }
  if (request.log_dir.empty()) {
    *context.err << "accel-launch report: no LOG_DIR (usage: accel-launch report LOG_DIR "
                    "[--output PNG])\n";
    return kExitUsage;
  }
  request.path_env = context.env ? context.env("PATH").value_or("") : "";
  return RunReportCommand(request, *context.out, *context.err);
}

int PreflightCommand(const std::vector<std::string>& args, const CliContext& context) {
  FlagSet set{"accel-launch preflight",
              "Measure bandwidth and latency between every pair of machines of the job, and an "
              "all-reduce of the bucket size; run it on every machine, as a launch.",
              /*program=*/false, /*launch_only=*/true};
  LaunchArgs parsed;
  if (int code = Parse(set, args, context, &parsed); code >= 0) return code;
  ResolvedConfig resolved = Resolve(parsed, context);
  if (!Report(resolved, context, "nothing was measured")) return kExitUsage;
  LaunchRequest request;
  request.config = std::move(resolved.config);
  request.config_path = resolved.path;
  request.dry_run = parsed.dry_run;
  request.preflight_only = true;
  return context.run_agent(request);
}

}  // namespace

int RunCli(const std::vector<std::string>& args, const CliContext& context) {
  if (args.empty()) {
    *context.err << kUsage;
    return kExitUsage;
  }
  const std::string& first = args.front();
  if (first == "-h" || first == "--help" || first == "help") {
    *context.out << kUsage;
    return kExitOk;
  }
  if (first == "--version") {
    *context.out << "accel-launch " << kVersion << "\n";
    return kExitOk;
  }
  if (first == "launch") return Launch(Tail(args, 1), context);
  if (first == "config") return ConfigCommand(Tail(args, 1), context);
  if (first == "env") return EnvCommand(Tail(args, 1), context);
  if (first == "status") return StatusCommand(Tail(args, 1), context);
  if (first == "report") return ReportCommand(Tail(args, 1), context);
  if (first == "preflight") return PreflightCommand(Tail(args, 1), context);
  if (first == "token")
    return RunTokenCommand(Tail(args, 1), context.env, *context.out, *context.err);
  return Launch(args, context);
}

}  // namespace accel::launcher
