#include "launcher/cli/flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <deque>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "launcher/cli/accelerate_flags.h"
#include "launcher/cli/compat_flags.h"
#include "launcher/config/diagnostics.h"
#include "launcher/config/schema.h"

namespace accel::launcher {
namespace {

constexpr char kKeysGroup[] = "Config keys (same as the YAML keys; also ACCEL_<KEY> variables)";
constexpr char kCompatGroup[] = "torchrun's and accelerate launch's own spellings";
constexpr char kAccelerateGroup[] = "accelerate launch's plugin options (Python scripts)";

// "--num_processes,--num-processes" (+ negations for booleans).
std::string FlagNames(absl::string_view key, bool negatable, absl::string_view extra = "") {
  const std::string dashed = absl::StrReplaceAll(key, {{"_", "-"}});
  std::string names = absl::StrCat("--", key);
  if (dashed != key) absl::StrAppend(&names, ",--", dashed);
  if (!extra.empty()) absl::StrAppend(&names, ",", extra);
  if (negatable) {
    absl::StrAppend(&names, ",!--no-", key);
    if (dashed != key) absl::StrAppend(&names, ",!--no-", dashed);
  }
  return names;
}

struct KeyOption {
  std::string key;
  CLI::Option* option = nullptr;
};

// Joins torchrun's "--tee 3" / "-t 3" into "--tee=3" (tee is also a switch, so CLI11 would take
// "3" for the program). Stops at the program: the first word that is not an option or the value
// of one (`value_options`).
std::vector<std::string> JoinTeeValues(const std::vector<std::string>& args,
                                       const std::vector<std::string>& value_options) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < args.size()) {
    const std::string& word = args[i];
    if (word == "--" || word.size() < 2 || word[0] != '-') break;
    const bool tee = word == "--tee" || word == "-t";
    if (tee && i + 1 < args.size() && IsStdSpec(args[i + 1])) {
      out.push_back("--tee=" + args[i + 1]);
      i += 2;
      continue;
    }
    out.push_back(word);
    ++i;
    const bool takes_value =
        word.find('=') == std::string::npos &&
        std::find(value_options.begin(), value_options.end(), word) != value_options.end();
    if (takes_value && i < args.size()) out.push_back(args[i++]);
  }
  out.insert(out.end(), args.begin() + static_cast<long>(i), args.end());
  return out;
}

}  // namespace

namespace {

// The parser of one command: its CLI11 app and where each option lands.
struct Parser {
  CLI::App app;
  std::vector<std::string> option_names = {"config_file", "verbose"};  // for "did you mean"
  std::vector<std::string> value_options = {"--config_file", "--config-file"};
  std::vector<KeyOption> key_options;
  std::deque<std::vector<std::string>> flag_values;  // stable addresses for CLI11
  bool multi_gpu = false;
  CompatArgs compat;
  AccelerateFlagArgs accelerate;

  Parser(const FlagSet& set, LaunchArgs* out) : app(set.description, set.name) {
    app.set_help_flag("-h,--help", "print this help and exit");
    if (set.program) {
      app.prefix_command();
      app.footer(
          "The first argument that is not an option is the program; it and everything after it "
          "are passed to the program unchanged. PROGRAM.py runs under `python` (python3); -m "
          "runs a module; --no_python execs PROGRAM as it is.");
    } else {
      app.allow_extras();  // reported by Rest with our own message
    }
    app.add_option("--config_file,--config-file", out->config_file,
                   "config file (default: $ACCEL_CONFIG_FILE, ~/.config/accel-launch/"
                   "default_config.yaml, $HF_HOME/accelerate/default_config.yaml)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.add_flag("-v,--verbose", out->verbose, "log debug details");
    if (set.launch_only) {
      app.add_flag("--dry_run,--dry-run", out->dry_run,
                   "print the launch plan and exit without starting anything");
      option_names.push_back("dry_run");
    }
    if (set.json) {
      app.add_flag("--json", out->json, "print machine-readable JSON");
      option_names.push_back("json");
    }
    app.add_flag("--multi_gpu,--multi-gpu", multi_gpu, "same as --distributed_type MULTI_GPU")
        ->group(kKeysGroup);
    option_names.push_back("multi_gpu");
    if (set.compat) {
      AddCompatOptions(&app, kCompatGroup, &compat, &option_names, &value_options);
      AddAccelerateOptions(&app, kAccelerateGroup, &accelerate, &option_names, &value_options);
    }
    AddKeyOptions();
  }

  // Registers every config key as an option.
  void AddKeyOptions() {
    for (const KeySpec& spec : Schema()) {
      if (spec.kind == KeyKind::kIgnored || spec.kind == KeyKind::kSection) continue;
      const bool is_bool = spec.kind == KeyKind::kBool;
      const std::string extra = spec.name == "use_cpu" ? "--cpu" : spec.name == "tee" ? "-t" : "";
      const std::string names = FlagNames(spec.name, is_bool, extra);
      if (!is_bool) {
        for (absl::string_view word : absl::StrSplit(names, ',')) value_options.emplace_back(word);
      }
      // Flags bind a vector so that each occurrence is kept as "true"/"false"/"<text>".
      CLI::Option* option =
          is_bool ? app.add_flag(names, flag_values.emplace_back())
                  : app.add_option(names)->type_name("VALUE")->expected(1)->multi_option_policy(
                        CLI::MultiOptionPolicy::TakeAll);
      option->description(std::string(spec.help))->group(kKeysGroup);
      key_options.push_back({std::string(spec.name), option});
      option_names.emplace_back(spec.name);
    }
  }

  // Fills `out` with the config values and launch options given.
  void Collect(LaunchArgs* out) {
    std::vector<FlagValue> key_flags;
    if (multi_gpu) key_flags.push_back({"distributed_type", "MULTI_GPU", "--multi_gpu"});
    for (const KeyOption& key_option : key_options) {
      if (key_option.option->count() == 0) continue;
      const std::vector<std::string>& results = key_option.option->results();
      key_flags.push_back({key_option.key, results.empty() ? "true" : results.back(), ""});
    }
    CompatResult result = TranslateCompat(compat, key_flags);
    out->flags = std::move(result.flags);
    out->nproc_per_node = std::move(result.nproc_per_node);
    out->problems = std::move(result.problems);
    TranslateAccelerate(accelerate, &out->flags, &out->problems);
    out->notices = std::move(result.notices);
    out->torchrun_style = result.torchrun_style;
    out->module = compat.module;
    out->no_python = compat.no_python;
    out->run_path = compat.run_path;
    out->role = compat.role;
  }

  // Takes the program and its arguments from what CLI11 left, or explains a stray option.
  ParseOutcome Rest(const FlagSet& set, LaunchArgs* out) {
    std::vector<std::string> rest = app.remaining();
    // After "--" the next word is the program even when it starts with '-'.
    const bool after_separator = !rest.empty() && rest.front() == "--";
    if (after_separator) rest.erase(rest.begin());
    if (!rest.empty() && !set.program) {
      return {ParseOutcome::Kind::kError, absl::StrCat("unexpected argument '", rest.front(),
                                                       "' (see `", set.name, " --help`)")};
    }
    if (!after_separator && !rest.empty() && rest.front().size() > 1 && rest.front()[0] == '-') {
      const std::string word = rest.front().substr(0, rest.front().find('='));
      const size_t name_start = word.find_first_not_of('-');
      std::string trimmed = name_start == std::string::npos ? "" : word.substr(name_start);
      if (trimmed.rfind("no-", 0) == 0) trimmed = trimmed.substr(3);
      std::vector<absl::string_view> candidates(option_names.begin(), option_names.end());
      std::string message = absl::StrCat("unknown option '", word, "'");
      const std::string match = ClosestMatch(trimmed, candidates);
      if (!match.empty()) absl::StrAppend(&message, "; did you mean '--", match, "'?");
      return {ParseOutcome::Kind::kError, absl::StrCat(message, " (see `", set.name, " --help`)")};
    }
    out->program = std::move(rest);
    return {};
  }
};

}  // namespace

ParseOutcome ParseLaunchArgs(const FlagSet& set, const std::vector<std::string>& args,
                             LaunchArgs* out) {
  Parser parser(set, out);
  const std::vector<std::string> joined = JoinTeeValues(args, parser.value_options);
  std::vector<std::string> reversed(joined.rbegin(), joined.rend());
  try {
    parser.app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return {ParseOutcome::Kind::kHelp, parser.app.help()};
  } catch (const CLI::ParseError& e) {
    return {ParseOutcome::Kind::kError, absl::StrCat(e.what(), " (see `", set.name, " --help`)")};
  }
  parser.Collect(out);
  return parser.Rest(set, out);
}

}  // namespace accel::launcher
