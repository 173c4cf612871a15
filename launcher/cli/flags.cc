#include "launcher/cli/flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <deque>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "launcher/config/diagnostics.h"
#include "launcher/config/schema.h"

namespace accel::launcher {
namespace {

constexpr char kKeysGroup[] = "Config keys (same as the YAML keys; also ACCEL_<KEY> variables)";

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

}  // namespace

ParseOutcome ParseLaunchArgs(const FlagSet& set, const std::vector<std::string>& args,
                             LaunchArgs* out) {
  CLI::App app(set.description, set.name);
  app.set_help_flag("-h,--help", "print this help and exit");
  if (set.program) {
    app.prefix_command();
  } else {
    app.allow_extras();  // reported below with our own message
  }
  std::vector<std::string> option_names = {"config_file", "verbose"};
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
  bool multi_gpu = false;
  app.add_flag("--multi_gpu,--multi-gpu", multi_gpu, "same as --distributed_type MULTI_GPU")
      ->group(kKeysGroup);
  option_names.push_back("multi_gpu");

  std::vector<KeyOption> key_options;
  std::deque<std::vector<std::string>> flag_values;  // stable addresses for CLI11
  for (const KeySpec& spec : Schema()) {
    if (spec.kind == KeyKind::kIgnored || spec.kind == KeyKind::kSection) continue;
    const bool is_bool = spec.kind == KeyKind::kBool;
    const std::string names = FlagNames(spec.name, is_bool, spec.name == "use_cpu" ? "--cpu" : "");
    // Flags bind a vector so that each occurrence is kept as "true"/"false"/"<text>".
    CLI::Option* option =
        is_bool ? app.add_flag(names, flag_values.emplace_back())
                : app.add_option(names)->type_name("VALUE")->expected(1)->multi_option_policy(
                      CLI::MultiOptionPolicy::TakeAll);
    option->description(std::string(spec.help))->group(kKeysGroup);
    key_options.push_back({std::string(spec.name), option});
    option_names.emplace_back(spec.name);
  }
  if (set.program) {
    app.footer(
        "The first argument that is not an option is the program; it and everything after it "
        "are passed to the program unchanged.");
  }

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return {ParseOutcome::Kind::kHelp, app.help()};
  } catch (const CLI::ParseError& e) {
    return {ParseOutcome::Kind::kError, absl::StrCat(e.what(), " (see `", set.name, " --help`)")};
  }

  if (multi_gpu) out->flags.emplace_back("distributed_type", "MULTI_GPU");
  for (const KeyOption& key_option : key_options) {
    if (key_option.option->count() == 0) continue;
    const std::vector<std::string>& results = key_option.option->results();
    out->flags.emplace_back(key_option.key, results.empty() ? "true" : results.back());
  }

  std::vector<std::string> rest = app.remaining();
  // After "--" the next word is the program even when it starts with '-'.
  const bool after_separator = !rest.empty() && rest.front() == "--";
  if (after_separator) rest.erase(rest.begin());
  if (!rest.empty() && !set.program) {
    return {ParseOutcome::Kind::kError,
            absl::StrCat("unexpected argument '", rest.front(), "' (see `", set.name, " --help`)")};
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

}  // namespace accel::launcher
