#include "launcher/config/resolve.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "launcher/config/loader.h"
#include "launcher/config/netif.h"
#include "launcher/config/paths.h"
#include "launcher/config/scheduler_detect.h"
#include "launcher/config/schema.h"
#include "launcher/config/validate.h"

namespace accel::launcher {
namespace {

bool IsFile(const std::string& path) {
  struct stat st;
  return !path.empty() && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Home(const EnvLookup& env) {
  std::optional<std::string> home = env("HOME");
  return home && !home->empty() ? *home : "";
}

// Sets the defaults for this machine's hardware and returns the start of the notice that says so.
std::string ApplyHardwareDefaults(const ResolveOptions& options, const ConfigLookup& lookup,
                                  Config* config, SourceMap* sources) {
  // The reason there is no GPU is the agent's notice to give; this one only lists the defaults.
  std::string why;
  const int gpus = options.count_gpus ? options.count_gpus(&why) : 0;
  *config = DefaultsForHardware(gpus);
  for (const char* key : {"num_processes", "distributed_type"}) {
    (*sources)[key].kind = ValueOrigin::Kind::kHardware;
  }
  const std::string found = gpus > 0 ? absl::StrCat(gpus, " GPU(s)") : std::string("no GPU");
  return absl::StrCat("no config file (looked in ", absl::StrJoin(lookup.tried, ", "),
                      "); using defaults for this machine, ", found);
}

// Returns "distributed_type=NO num_processes=1 mixed_precision=no" for the keys that still hold
// this machine's defaults once every source is applied, so that the notice never lists a value
// the options replaced (distributed_type follows num_processes: it is listed only with it).
std::string DefaultsLeft(const ResolvedConfig& out) {
  auto is_default = [&out](const char* key) {
    auto it = out.sources.find(key);
    return it == out.sources.end() || it->second.kind == ValueOrigin::Kind::kDefault ||
           it->second.kind == ValueOrigin::Kind::kHardware;
  };
  std::vector<std::string> left;
  const bool processes = is_default("num_processes");
  if (processes && is_default("distributed_type")) {
    left.push_back(absl::StrCat("distributed_type=", ToString(out.config.distributed_type)));
  }
  if (processes) left.push_back(absl::StrCat("num_processes=", out.config.num_processes));
  if (is_default("mixed_precision")) {
    left.push_back(absl::StrCat("mixed_precision=", ToString(out.config.mixed_precision)));
  }
  return absl::StrJoin(left, " ");
}

// Applies one text value from the environment, the scheduler or the command line.
void ApplyText(const std::string& key, const std::string& text, ValueOrigin origin,
               ResolvedConfig* out) {
  const KeySpec* spec = FindKey(key);
  if (spec == nullptr) {
    out->problems.push_back({origin.where, 0, 0, "", absl::StrCat("unknown key '", key, "'")});
    return;
  }
  Config updated = out->config;  // a rejected value leaves the config unchanged
  const absl::Status status = spec->set(ScalarValue(text), &updated);
  if (status.ok()) out->config = std::move(updated);
  if (!status.ok()) {
    out->problems.push_back(
        {origin.where, 0, 0, "", absl::StrCat(spec->name, ": ", status.message())});
    out->sources[std::string(spec->name)].kind = ValueOrigin::Kind::kRejected;
    return;
  }
  out->sources[std::string(spec->name)] = std::move(origin);
}

void ApplyScheduler(const ResolveOptions& options, ResolvedConfig* out) {
  absl::StatusOr<SchedulerInfo> info = DetectScheduler(options.env);
  if (!info.ok()) {
    out->problems.push_back({"", 0, 0, "", std::string(info.status().message())});
    return;
  }
  std::vector<std::string> applied;
  for (const SchedulerValue& value : info->values) {
    if (value.fallback && out->sources.count(value.key) != 0) continue;
    ValueOrigin origin;
    origin.kind = ValueOrigin::Kind::kScheduler;
    origin.where = value.origin;
    ApplyText(value.key, value.value, origin, out);
    applied.push_back(absl::StrCat(value.key, "=", value.value));
  }
  if (!applied.empty()) {
    out->notices.push_back(absl::StrCat(info->name, " detected: ", absl::StrJoin(applied, " "),
                                        " (environment and flags still take precedence)"));
  }
}

// Makes use_cpu, distributed_type and num_processes agree, as `accelerate launch` does.
void Normalize(ResolvedConfig* out) {
  Config& c = out->config;
  if (c.use_cpu && c.distributed_type == DistributedType::kMultiGpu) {
    c.distributed_type = DistributedType::kMultiCpu;
    out->notices.push_back("use_cpu is set: distributed_type MULTI_GPU becomes MULTI_CPU");
  }
  // Several processes are a distributed job, as `accelerate launch` treats them. No notice: the
  // plan says once what runs (MULTI_GPU here may still run on CPU when there is no GPU).
  if (c.distributed_type == DistributedType::kNo && c.num_processes > 1) {
    c.distributed_type = c.use_cpu ? DistributedType::kMultiCpu : DistributedType::kMultiGpu;
  }
}

// Returns the processes per machine torchrun's --nproc_per_node `text` asks for, or why not.
absl::StatusOr<int> ProcessesPerNode(const std::string& text, const ResolveOptions& options) {
  int n = 0;
  if (absl::SimpleAtoi(text, &n) && n >= 1) return n;
  std::string why;
  const int gpus = options.count_gpus ? options.count_gpus(&why) : 0;
  const int cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  if (text == "gpu") {
    if (gpus > 0) return gpus;
    return absl::InvalidArgumentError(
        absl::StrCat("--nproc_per_node gpu: no GPU here (", why, ")"));
  }
  if (text == "cpu") return std::max(cpus, 1);
  if (text == "auto") return gpus > 0 ? gpus : std::max(cpus, 1);
  return absl::InvalidArgumentError(absl::StrCat(
      "--nproc_per_node ", text, ": expected a number of processes >= 1, auto, gpu or cpu"));
}

// Applies torchrun's --nproc_per_node: num_processes = nproc_per_node × num_machines.
void ApplyProcessesPerNode(const ResolveOptions& options, ResolvedConfig* out) {
  if (options.nproc_per_node.empty()) return;
  absl::StatusOr<int> per_node = ProcessesPerNode(options.nproc_per_node, options);
  if (!per_node.ok()) {
    out->problems.push_back({"", 0, 0, "", std::string(per_node.status().message())});
    return;
  }
  Config& c = out->config;
  const int machines = std::max(c.num_machines, 1);
  const int total = *per_node * machines;
  const std::string spelling = absl::StrCat("--nproc_per_node ", options.nproc_per_node);
  auto it = out->sources.find("num_processes");
  if (it != out->sources.end() && it->second.kind == ValueOrigin::Kind::kCommandLine &&
      c.num_processes != total) {
    out->problems.push_back(
        {"", 0, 0, "",
         absl::StrCat(it->second.where, " and ", spelling,
                      " disagree: accelerate's num_processes is the total over all machines, "
                      "torchrun's nproc_per_node is per machine (",
                      *per_node, " x ", machines, " machine(s) = ", total,
                      " processes); give one of them")});
    return;
  }
  c.num_processes = total;
  ValueOrigin origin;
  origin.kind = ValueOrigin::Kind::kCommandLine;
  origin.where = absl::StrCat(spelling, " x ", machines, " machine(s)");
  out->sources["num_processes"] = std::move(origin);
}

// Adds a problem when log_dir cannot be created and written (a launch would fail there).
void CheckLogDir(ResolvedConfig* out) {
  const std::string& dir = out->config.log_dir;
  if (dir.empty() || !Accepted(out->sources, "log_dir")) return;
  const absl::Status status = CheckDirectoryCreatable(dir);
  if (!status.ok()) {
    out->problems.push_back(DiagnosticFor(out->sources, "log_dir",
                                          absl::StrCat("log_dir ", dir, ": ", status.message())));
  }
}

// Fills local_addr from network_interface when only the interface is given.
void ResolveInterface(ResolvedConfig* out) {
  Config& c = out->config;
  if (c.network_interface.empty() || !c.local_addr.empty()) return;
  absl::StatusOr<std::string> address = InterfaceAddress(c.network_interface);
  if (!address.ok()) {
    out->problems.push_back(
        DiagnosticFor(out->sources, "network_interface", std::string(address.status().message())));
    return;
  }
  c.local_addr = *address;
  out->sources["local_addr"] = out->sources["network_interface"];
}

}  // namespace

Config DefaultsForHardware(int gpus) {
  Config config;
  config.num_processes = gpus > 0 ? gpus : 1;
  config.distributed_type = gpus > 1 ? DistributedType::kMultiGpu : DistributedType::kNo;
  return config;
}

std::string OurDefaultConfigPath(const EnvLookup& env) {
  const std::string home = Home(env);
  return home.empty() ? "" : home + "/.config/accel-launch/default_config.yaml";
}

std::string AccelerateDefaultConfigPath(const EnvLookup& env) {
  // As accelerate computes it: $HF_HOME, else ${XDG_CACHE_HOME:-~/.cache}/huggingface.
  std::optional<std::string> hf_home = env("HF_HOME");
  std::optional<std::string> xdg_cache = env("XDG_CACHE_HOME");
  std::string dir;
  if (hf_home && !hf_home->empty()) {
    dir = *hf_home;
  } else if (xdg_cache && !xdg_cache->empty()) {
    dir = *xdg_cache + "/huggingface";
  } else if (!Home(env).empty()) {
    dir = Home(env) + "/.cache/huggingface";
  } else {
    return "";
  }
  return dir + "/accelerate/default_config.yaml";
}

ConfigLookup FindConfigFile(const std::string& flag_path, const EnvLookup& env) {
  ConfigLookup lookup;
  if (!flag_path.empty()) {
    lookup.path = flag_path;
    lookup.explicit_path = true;
    return lookup;
  }
  std::optional<std::string> from_env = env("ACCEL_CONFIG_FILE");
  if (from_env && !from_env->empty()) {
    lookup.path = *from_env;
    lookup.explicit_path = true;
    return lookup;
  }
  for (const std::string& path : {OurDefaultConfigPath(env), AccelerateDefaultConfigPath(env)}) {
    if (path.empty()) continue;
    lookup.tried.push_back(path);
    if (IsFile(path)) {
      lookup.path = path;
      return lookup;
    }
  }
  return lookup;
}

ResolvedConfig ResolveConfig(const ResolveOptions& options) {
  ResolvedConfig out;
  const ConfigLookup lookup = FindConfigFile(options.config_file, options.env);
  out.path = lookup.path;
  bool empty = false;
  std::string defaults_notice;  // completed once every source is applied
  if (lookup.path.empty()) {
    defaults_notice = ApplyHardwareDefaults(options, lookup, &out.config, &out.sources);
  } else {
    std::vector<Diagnostic> file_problems =
        ApplyConfigFile(lookup.path, &out.config, &out.sources, &empty);
    out.problems.insert(out.problems.end(), file_problems.begin(), file_problems.end());
  }
  if (empty) {
    // Like no file at all, but say which file was read.
    ApplyHardwareDefaults(options, lookup, &out.config, &out.sources);
    defaults_notice =
        absl::StrCat("config file ", lookup.path, " is empty: using defaults for this machine");
  }
  if (options.detect_scheduler) ApplyScheduler(options, &out);
  for (const KeySpec& spec : Schema()) {
    if (spec.kind == KeyKind::kIgnored || spec.kind == KeyKind::kSection) continue;
    const std::string name = EnvVarName(spec.name);
    std::optional<std::string> text = options.env(name);
    if (text && !text->empty()) {  // VAR= (empty) reads as unset, as shells use it
      ValueOrigin origin;
      origin.kind = ValueOrigin::Kind::kEnvironment;
      origin.where = absl::StrCat(name, "=", *text);
      ApplyText(std::string(spec.name), *text, origin, &out);
    }
  }
  for (const FlagValue& flag : options.flags) {
    ValueOrigin origin;
    origin.kind = ValueOrigin::Kind::kCommandLine;
    const KeySpec* spec = FindKey(flag.key);
    origin.where =
        !flag.spelling.empty()
            ? flag.spelling
            : absl::StrCat("--", spec != nullptr ? spec->name : flag.key, " ", flag.text);
    ApplyText(flag.key, flag.text, origin, &out);
  }
  out.problems.insert(out.problems.end(), options.flag_problems.begin(),
                      options.flag_problems.end());
  ApplyProcessesPerNode(options, &out);
  Normalize(&out);
  if (!defaults_notice.empty()) {
    const std::string left = DefaultsLeft(out);
    if (!left.empty()) absl::StrAppend(&defaults_notice, empty ? ", " : ": ", left);
    if (!empty) absl::StrAppend(&defaults_notice, " (write a file with `accel-launch config`)");
    out.notices.insert(out.notices.begin(), defaults_notice);
  }
  ResolveInterface(&out);
  std::vector<Diagnostic> invalid = ValidateConfig(out.config, out.sources);
  out.problems.insert(out.problems.end(), invalid.begin(), invalid.end());
  CheckLogDir(&out);
  // Like a compiler: file positions in order first, then the rest as found.
  std::stable_sort(
      out.problems.begin(), out.problems.end(), [](const Diagnostic& a, const Diagnostic& b) {
        if ((a.line > 0) != (b.line > 0)) return a.line > 0;
        if (a.line == 0) return false;
        return std::tie(a.where, a.line, a.column) < std::tie(b.where, b.line, b.column);
      });
  return out;
}

}  // namespace accel::launcher
