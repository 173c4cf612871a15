#include "launcher/config/scheduler_detect.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/defaults.h"

namespace accel::launcher {
namespace {

constexpr size_t kMaxHosts = 1 << 20;

// Expands one bracket body "01-04,07" into its numbers as text, keeping zero padding.
absl::StatusOr<std::vector<std::string>> ExpandRanges(absl::string_view body) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(body, ',')) {
    std::vector<absl::string_view> bounds = absl::StrSplit(part, absl::MaxSplits('-', 1));
    uint64_t lo = 0;
    uint64_t hi = 0;
    if (bounds[0].empty() || !absl::SimpleAtoi(bounds[0], &lo) ||
        (bounds.size() == 2 && !absl::SimpleAtoi(bounds[1], &hi))) {
      return absl::InvalidArgumentError(absl::StrCat("bad range '", part, "'"));
    }
    if (bounds.size() == 1) hi = lo;
    if (hi < lo || hi - lo >= kMaxHosts) {
      return absl::InvalidArgumentError(absl::StrCat("bad range '", part, "'"));
    }
    const size_t width = bounds[0].size();
    for (uint64_t n = lo; n <= hi; ++n) {
      std::string digits = absl::StrCat(n);
      if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
      out.push_back(std::move(digits));
    }
  }
  return out;
}

// Expands one host expression without top-level commas, e.g. "n[1-2]-ib[3-4]".
absl::Status ExpandHost(absl::string_view host, std::vector<std::string>* out) {
  std::vector<std::string> prefixes = {""};
  size_t i = 0;
  while (i < host.size()) {
    const size_t open = host.find('[', i);
    const absl::string_view literal =
        host.substr(i, open == absl::string_view::npos ? host.npos : open - i);
    if (literal.find(']') != absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("unbalanced ']' in '", host, "'"));
    }
    for (std::string& prefix : prefixes) absl::StrAppend(&prefix, literal);
    if (open == absl::string_view::npos) break;
    const size_t close = host.find(']', open);
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("unbalanced '[' in '", host, "'"));
    }
    auto numbers = ExpandRanges(host.substr(open + 1, close - open - 1));
    if (!numbers.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(numbers.status().message(), " in '", host, "'"));
    }
    std::vector<std::string> next;
    for (const std::string& prefix : prefixes) {
      for (const std::string& number : *numbers) next.push_back(prefix + number);
    }
    if (next.size() > kMaxHosts) return absl::InvalidArgumentError("node list too long");
    prefixes = std::move(next);
    i = close + 1;
  }
  out->insert(out->end(), prefixes.begin(), prefixes.end());
  return absl::OkStatus();
}

std::optional<int> ReadInt(const EnvLookup& env, const std::string& name, absl::Status* error) {
  std::optional<std::string> text = env(name);
  if (!text) return std::nullopt;
  int value = 0;
  if (!absl::SimpleAtoi(*text, &value) || value < 0) {
    *error = absl::InvalidArgumentError(
        absl::StrCat("read ", name, ": expected a non-negative integer, got '", *text, "'"));
    return std::nullopt;
  }
  return value;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandNodeList(absl::string_view list) {
  std::vector<std::string> hosts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i < list.size() && list[i] == '[') ++depth;
    if (i < list.size() && list[i] == ']') --depth;
    if (depth < 0)
      return absl::InvalidArgumentError(absl::StrCat("unbalanced ']' in '", list, "'"));
    if (i == list.size() || (list[i] == ',' && depth == 0)) {
      const absl::string_view host = list.substr(start, i - start);
      if (host.empty())
        return absl::InvalidArgumentError(absl::StrCat("empty host in '", list, "'"));
      absl::Status status = ExpandHost(host, &hosts);
      if (!status.ok()) return status;
      start = i + 1;
    }
  }
  return hosts;
}

absl::StatusOr<SchedulerInfo> DetectScheduler(const EnvLookup& env) {
  SchedulerInfo info;
  absl::Status error;
  if (env("SLURM_JOB_ID")) {
    info.name = "Slurm";
    if (auto rank = ReadInt(env, "SLURM_NODEID", &error)) {
      info.values.push_back(
          {"machine_rank", absl::StrCat(*rank), absl::StrCat("SLURM_NODEID=", *rank)});
    }
    if (auto count = ReadInt(env, "SLURM_NNODES", &error)) {
      info.values.push_back(
          {"num_machines", absl::StrCat(*count), absl::StrCat("SLURM_NNODES=", *count)});
    }
    if (!error.ok()) return error;
    for (const char* name : {"SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
      std::optional<std::string> list = env(name);
      if (!list || list->empty()) continue;
      auto hosts = ExpandNodeList(*list);
      if (!hosts.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("expand ", name, "='", *list, "': ", hosts.status().message()));
      }
      info.values.push_back({"main_process_ip", hosts->front(), absl::StrCat(name, "=", *list)});
      break;
    }
    if (auto job = ReadInt(env, "SLURM_JOB_ID", &error)) {
      const int port = defaults::kSlurmPortBase + *job % defaults::kSlurmPortSpan;
      info.values.push_back(
          {"main_process_port", absl::StrCat(port),
           absl::StrCat("SLURM_JOB_ID=", *job, " (port ", defaults::kSlurmPortBase, " + job id % ",
                        defaults::kSlurmPortSpan, ")"),
           /*fallback=*/true});
    }
    if (!error.ok()) return error;
    return info;
  }
  if (env("OMPI_COMM_WORLD_RANK") || env("OMPI_COMM_WORLD_SIZE")) {
    info.name = "Open MPI";
    if (auto rank = ReadInt(env, "OMPI_COMM_WORLD_RANK", &error)) {
      info.values.push_back(
          {"machine_rank", absl::StrCat(*rank), absl::StrCat("OMPI_COMM_WORLD_RANK=", *rank)});
    }
    if (auto size = ReadInt(env, "OMPI_COMM_WORLD_SIZE", &error)) {
      info.values.push_back(
          {"num_machines", absl::StrCat(*size), absl::StrCat("OMPI_COMM_WORLD_SIZE=", *size)});
    }
    if (!error.ok()) return error;
    return info;
  }
  if (env("JOB_COMPLETION_INDEX")) {
    // A Kubernetes indexed Job: the pod's index is the machine; the pod template sets the rest.
    info.name = "Kubernetes";
    if (auto index = ReadInt(env, "JOB_COMPLETION_INDEX", &error)) {
      info.values.push_back(
          {"machine_rank", absl::StrCat(*index), absl::StrCat("JOB_COMPLETION_INDEX=", *index)});
    }
    if (!error.ok()) return error;
  }
  return info;
}

}  // namespace accel::launcher
