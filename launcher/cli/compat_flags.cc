#include "launcher/cli/compat_flags.h"

#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "launcher/config/config.h"
#include "launcher/config/schema.h"
#include "launcher/config/values.h"

namespace accel::launcher {
namespace {

Diagnostic Problem(std::string message) { return Diagnostic{"", 0, 0, "", std::move(message)}; }

// Registers "--a_b,--a-b" (and `extra`) as a string option bound to `value`.
void AddString(CLI::App* app, const std::string& group, const std::string& name,
               const std::string& extra, const std::string& help, std::string* value,
               std::vector<std::string>* names, std::vector<std::string>* value_options) {
  std::string dashed = name;
  for (char& c : dashed) c = c == '_' ? '-' : c;
  std::string spellings = absl::StrCat("--", name);
  if (dashed != name) absl::StrAppend(&spellings, ",--", dashed);
  if (!extra.empty()) absl::StrAppend(&spellings, ",", extra);
  app->add_option(spellings, *value, help)->type_name("VALUE")->group(group);
  names->push_back(name);
  for (absl::string_view word : absl::StrSplit(spellings, ',')) value_options->emplace_back(word);
}

void AddFlag(CLI::App* app, const std::string& group, const std::string& name,
             const std::string& extra, const std::string& help, bool* value,
             std::vector<std::string>* names) {
  std::string dashed = name;
  for (char& c : dashed) c = c == '_' ? '-' : c;
  std::string spellings = absl::StrCat("--", name);
  if (dashed != name) absl::StrAppend(&spellings, ",--", dashed);
  if (!extra.empty()) absl::StrAppend(&spellings, ",", extra);
  app->add_flag(spellings, *value, help)->group(group);
  names->push_back(name);
}

// What one torchrun spelling sets.
struct Translated {
  std::vector<FlagValue> flags;
  std::vector<Diagnostic> problems;
  std::vector<std::string> notices;
};

// --nnodes N: num_machines; --nnodes MIN:MAX: elastic membership, min_machines MIN and
// num_machines MAX (N:N is N, as torchrun's static spelling).
void TranslateNnodes(const std::string& text, Translated* out) {
  const std::vector<std::string> parts = absl::StrSplit(text, ':');
  int low = 0, high = 0;
  bool numbers = parts.size() <= 2 && absl::SimpleAtoi(parts.front(), &low);
  high = low;
  if (numbers && parts.size() == 2) numbers = absl::SimpleAtoi(parts.back(), &high);
  if (!numbers || low < 1 || high < low) {
    out->problems.push_back(Problem(absl::StrCat(
        "--nnodes ", text,
        ": expected a number of machines >= 1, or MIN:MAX with 1 <= MIN <= MAX (elastic)")));
    return;
  }
  const std::string spelling = absl::StrCat("--nnodes ", text);
  out->flags.push_back({"num_machines", absl::StrCat(high), spelling});
  if (low != high) out->flags.push_back({"min_machines", absl::StrCat(low), spelling});
}

// --rdzv_endpoint HOST:PORT (IPv6 as [addr]:port): main_process_ip and main_process_port.
void TranslateEndpoint(const std::string& text, Translated* out) {
  const size_t colon = text.rfind(':');
  const std::string spelling = absl::StrCat("--rdzv_endpoint ", text);
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size() ||
      (text.front() != '[' && text.find(':') != colon)) {
    out->problems.push_back(Problem(
        absl::StrCat(spelling,
                     ": expected HOST:PORT (IPv6 as [ADDRESS]:PORT), the address and port of "
                     "machine 0's rendezvous")));
    return;
  }
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  out->flags.push_back({"main_process_ip", host, spelling});
  out->flags.push_back({"main_process_port", text.substr(colon + 1), spelling});
}

// --rdzv_conf key=value,...: join_timeout is rdzv_timeout; other keys have no effect.
void TranslateRdzvConf(const std::string& text, Translated* out) {
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    const std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || absl::StripAsciiWhitespace(kv[0]).empty()) {
      out->problems.push_back(Problem(
          absl::StrCat("--rdzv_conf ", text,
                       ": expected key=value pairs separated by commas, got '", item, "'")));
      return;
    }
    const std::string key(absl::StripAsciiWhitespace(kv[0]));
    if (key == "join_timeout") {
      out->flags.push_back({"rdzv_timeout", std::string(absl::StripAsciiWhitespace(kv[1])),
                            absl::StrCat("--rdzv_conf ", item)});
    } else if (key == "last_call_timeout") {
      out->flags.push_back({"rdzv_last_call", std::string(absl::StripAsciiWhitespace(kv[1])),
                            absl::StrCat("--rdzv_conf ", item)});
    } else {
      out->notices.push_back(absl::StrCat("--rdzv_conf ", item,
                                          " has no effect (accel-launch's rendezvous takes "
                                          "join_timeout, as rdzv_timeout, and "
                                          "last_call_timeout, as rdzv_last_call)"));
    }
  }
}

// --tee/-t and --redirects/-r: accel-launch treats stdout and stderr of every rank alike.
// Returns 0 (off), 3 (both streams of every rank), or -1 for a partial spec (applied as 3).
int StdSpecLevel(absl::string_view spec) { return spec == "0" ? 0 : spec == "3" ? 3 : -1; }

void TranslateStreams(const CompatArgs& args, const std::vector<FlagValue>& key_flags,
                      Translated* out) {
  bool tee_given = false;
  for (const FlagValue& flag : key_flags) tee_given = tee_given || flag.key == "tee";
  if (args.redirects.empty()) return;
  if (!IsStdSpec(args.redirects)) {
    out->problems.push_back(
        Problem(absl::StrCat("--redirects ", args.redirects,
                             ": expected 0, 1, 2 or 3, or local_rank:value pairs like 0:3,1:2")));
    return;
  }
  const int level = StdSpecLevel(args.redirects);
  if (level == -1) {
    out->notices.push_back(absl::StrCat("--redirects ", args.redirects,
                                        " is applied as --redirects 3: accel-launch writes stdout "
                                        "and stderr of every rank to log_dir alike"));
  }
  if (level != 0 && !tee_given) {
    out->flags.push_back({"tee", "false", absl::StrCat("--redirects ", args.redirects)});
  }
}

// Rewrites --tee's torchrun values (0..3, maps) to the tee key's true/false.
std::vector<FlagValue> TeeAsSwitch(const std::vector<FlagValue>& key_flags,
                                   std::vector<std::string>* notices) {
  std::vector<FlagValue> out;
  for (FlagValue flag : key_flags) {
    if (flag.key == "tee" && IsStdSpec(flag.text)) {
      const int level = StdSpecLevel(flag.text);
      if (level == -1) {
        notices->push_back(absl::StrCat("--tee ", flag.text,
                                        " is applied as --tee 3: accel-launch tees stdout and "
                                        "stderr of every rank alike"));
      }
      flag.spelling = absl::StrCat("--tee ", flag.text);
      flag.text = level == 0 ? "false" : "true";
    }
    out.push_back(std::move(flag));
  }
  return out;
}

// Returns the value `text` gives `key` in YAML spelling, or "" when it does not parse.
std::string Normalized(const std::string& key, const std::string& text) {
  const KeySpec* spec = FindKey(key);
  Config config;
  if (spec == nullptr || !spec->set(ScalarValue(text), &config).ok()) return "";
  return spec->get(config);
}

// Adds a problem for every torchrun spelling that disagrees with an accelerate spelling.
void CheckAgreement(const std::vector<FlagValue>& ours, const std::vector<FlagValue>& torchrun,
                    std::vector<Diagnostic>* problems) {
  std::map<std::string, const FlagValue*> last;  // accelerate spelling in effect, per key
  for (const FlagValue& flag : ours) last[flag.key] = &flag;
  for (const FlagValue& flag : torchrun) {
    auto it = last.find(flag.key);
    if (it == last.end()) continue;
    const std::string a = Normalized(flag.key, it->second->text);
    const std::string b = Normalized(flag.key, flag.text);
    if (a.empty() || b.empty() || a == b) continue;
    const std::string theirs = it->second->spelling.empty()
                                   ? absl::StrCat("--", flag.key, " ", it->second->text)
                                   : it->second->spelling;
    problems->push_back(Problem(absl::StrCat(theirs, " and ", flag.spelling, " disagree (both set ",
                                             flag.key, "); give one of them")));
  }
}

// --standalone: one machine with a rendezvous on a free local port; torchrun ignores an explicit
// endpoint or id then, and so does accel-launch (with a notice).
void TranslateStandalone(const CompatArgs& args, Translated* out) {
  int nnodes = 1;
  if (!args.nnodes.empty() && absl::SimpleAtoi(args.nnodes, &nnodes) && nnodes != 1) {
    out->problems.push_back(Problem(absl::StrCat(
        "--standalone and --nnodes ", args.nnodes,
        " disagree: --standalone runs one machine; drop it to join ", nnodes, " machines")));
  }
  out->flags.push_back({"num_machines", "1", "--standalone"});
  out->flags.push_back({"main_process_port", "0", "--standalone"});
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string&>{"--rdzv_endpoint", args.rdzv_endpoint},
        {"--rdzv_id", args.rdzv_id},
        {"--master_addr", args.master_addr},
        {"--master_port", args.master_port}}) {
    if (!value.empty()) {
      out->notices.push_back(absl::StrCat(name, " ", value,
                                          " is ignored with --standalone (a free local port), as "
                                          "torchrun does"));
    }
  }
}

// Translates the torchrun spellings of config keys (in torchrun's precedence order: an explicit
// rdzv_endpoint wins over master_addr/master_port).
void TranslateTorchrunKeys(const CompatArgs& args, Translated* out) {
  if (!args.nnodes.empty()) TranslateNnodes(args.nnodes, out);
  if (args.standalone) {
    TranslateStandalone(args, out);
    return;
  }
  if (!args.node_rank.empty()) {
    out->flags.push_back(
        {"machine_rank", args.node_rank, absl::StrCat("--node_rank ", args.node_rank)});
  }
  if (!args.master_addr.empty()) {
    out->flags.push_back(
        {"main_process_ip", args.master_addr, absl::StrCat("--master_addr ", args.master_addr)});
  }
  if (!args.master_port.empty()) {
    out->flags.push_back(
        {"main_process_port", args.master_port, absl::StrCat("--master_port ", args.master_port)});
  }
  if (!args.rdzv_endpoint.empty()) TranslateEndpoint(args.rdzv_endpoint, out);
  if (!args.rdzv_id.empty()) {
    out->flags.push_back({"run_id", args.rdzv_id, absl::StrCat("--rdzv_id ", args.rdzv_id)});
  }
}

// torchrun's --numa_binding pins each worker near its GPU; accel-launch's CPU shares by NUMA node
// are the nearest thing. The options torchrun has for its own logging and signals do nothing here.
void TranslateTorchrunExtras(const CompatArgs& args, Translated* out) {
  if (!args.numa_binding.empty()) {
    out->flags.push_back(
        {"enable_cpu_affinity", "true", absl::StrCat("--numa_binding ", args.numa_binding)});
    out->notices.push_back(absl::StrCat("--numa_binding ", args.numa_binding,
                                        " is applied as enable_cpu_affinity: each local rank gets "
                                        "its own share of the CPUs, NUMA node by NUMA node"));
  }
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string&>{"--event_log_handler", args.event_log_handler},
        {"--logs_specs", args.logs_specs},
        {"--signals_to_handle", args.signals_to_handle}}) {
    if (!value.empty()) {
      out->notices.push_back(absl::StrCat(name, " ", value, " has no effect in accel-launch"));
    }
  }
}

// Refuses bad option pairs.
void CheckUnsupported(const CompatArgs& args, Translated* out) {
  const std::pair<bool, const char*> unsupported[] = {
      {args.module && args.no_python,
       "-m/--module and --no_python cannot be used together (a module needs Python)"},
  };
  for (const auto& [given, message] : unsupported) {
    if (given) out->problems.push_back(Problem(message));
  }
  if (!args.start_method.empty() && args.start_method != "spawn" && args.start_method != "fork" &&
      args.start_method != "forkserver") {
    out->problems.push_back(Problem(absl::StrCat("--start_method ", args.start_method,
                                                 ": expected spawn, fork or forkserver")));
  }
}

bool TorchrunStyle(const CompatArgs& args, const std::vector<FlagValue>& key_flags) {
  bool style = args.standalone || args.run_path;
  for (const std::string* value :
       {&args.nproc_per_node, &args.nnodes, &args.node_rank, &args.master_addr, &args.master_port,
        &args.rdzv_endpoint, &args.rdzv_id, &args.redirects, &args.start_method, &args.role,
        &args.numa_binding, &args.event_log_handler, &args.logs_specs, &args.signals_to_handle}) {
    style = style || !value->empty();
  }
  for (const FlagValue& flag : key_flags) style = style || flag.key == "local_ranks_filter";
  return style;
}

}  // namespace

bool IsStdSpec(absl::string_view text) {
  auto level = [](absl::string_view v) { return v.size() == 1 && v[0] >= '0' && v[0] <= '3'; };
  if (level(text)) return true;
  if (text.empty()) return false;
  for (absl::string_view pair : absl::StrSplit(text, ',')) {
    const std::vector<absl::string_view> parts = absl::StrSplit(pair, ':');
    int rank = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &rank) || rank < 0 || !level(parts[1])) {
      return false;
    }
  }
  return true;
}

void AddCompatOptions(CLI::App* app, const std::string& group, CompatArgs* args,
                      std::vector<std::string>* names, std::vector<std::string>* value_options) {
  AddFlag(app, group, "module", "-m", "run PROGRAM as a Python module (python -m PROGRAM)",
          &args->module, names);
  AddFlag(app, group, "no_python", "", "exec PROGRAM as it is, even when it ends in .py",
          &args->no_python, names);
  AddFlag(app, group, "run_path", "", "torchrun's: PROGRAM is a Python script", &args->run_path,
          names);
  AddFlag(app, group, "quiet", "-q", "accelerate's; accepted (the failure report is already short)",
          &args->quiet, names);
  AddFlag(app, group, "standalone", "", "torchrun's: one machine, rendezvous on a free local port",
          &args->standalone, names);
  const std::pair<const char*, std::string*> strings[] = {{"nproc_per_node", &args->nproc_per_node},
                                                          {"nnodes", &args->nnodes},
                                                          {"node_rank", &args->node_rank},
                                                          {"master_addr", &args->master_addr},
                                                          {"master_port", &args->master_port},
                                                          {"rdzv_endpoint", &args->rdzv_endpoint},
                                                          {"rdzv_id", &args->rdzv_id},
                                                          {"rdzv_conf", &args->rdzv_conf},
                                                          {"start_method", &args->start_method},
                                                          {"role", &args->role}};
  for (const auto& [name, value] : strings) {
    AddString(app, group, name, "", "torchrun's spelling (see docs/config.md)", value, names,
              value_options);
  }
  AddString(app, group, "redirects", "-r", "torchrun's: 0..3; with log_dir, 3 = files only",
            &args->redirects, names, value_options);
  AddString(app, group, "numa_binding", "", "torchrun's: pins workers as enable_cpu_affinity",
            &args->numa_binding, names, value_options);
  const std::pair<const char*, std::string*> ignored[] = {
      {"event_log_handler", &args->event_log_handler},
      {"logs_specs", &args->logs_specs},
      {"signals_to_handle", &args->signals_to_handle}};
  for (const auto& [name, value] : ignored) {
    AddString(app, group, name, "", "torchrun's; accepted, no effect", value, names, value_options);
  }
}

CompatResult TranslateCompat(const CompatArgs& args, const std::vector<FlagValue>& key_flags) {
  CompatResult result;
  result.torchrun_style = TorchrunStyle(args, key_flags);
  result.nproc_per_node = args.nproc_per_node;
  bool num_processes_given = false;
  for (const FlagValue& flag : key_flags) {
    num_processes_given = num_processes_given || flag.key == "num_processes";
  }
  // torchrun runs one process per machine unless told otherwise, whatever a config file says.
  if (result.torchrun_style && result.nproc_per_node.empty() && !num_processes_given) {
    result.nproc_per_node = "1";
  }
  result.flags = TeeAsSwitch(key_flags, &result.notices);
  Translated translated;
  CheckUnsupported(args, &translated);
  TranslateTorchrunKeys(args, &translated);
  TranslateTorchrunExtras(args, &translated);
  TranslateStreams(args, key_flags, &translated);
  if (!args.rdzv_conf.empty()) TranslateRdzvConf(args.rdzv_conf, &translated);
  CheckAgreement(result.flags, translated.flags, &result.problems);
  result.flags.insert(result.flags.end(), translated.flags.begin(), translated.flags.end());
  result.problems.insert(result.problems.begin(), translated.problems.begin(),
                         translated.problems.end());
  result.notices.insert(result.notices.end(), translated.notices.begin(), translated.notices.end());
  return result;
}

}  // namespace accel::launcher
