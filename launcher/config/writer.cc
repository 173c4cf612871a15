#include "launcher/config/writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/json.h"
#include "common/safe_open.h"
#include "launcher/config/schema.h"
#include "launcher/config/values.h"

namespace accel::launcher {
namespace {

absl::Status MakeDirs(const std::string& dir) {
  if (dir.empty()) return absl::OkStatus();
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) return absl::OkStatus();
  const size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    absl::Status parent = MakeDirs(dir.substr(0, slash));
    if (!parent.ok()) return parent;
  }
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::ErrnoToStatus(errno, absl::StrCat("create directory ", dir));
  }
  return absl::OkStatus();
}

}  // namespace

std::string ToConfigYaml(const Config& config) {
  const Config defaults;
  std::string out;
  for (const KeySpec& spec : Schema()) {
    const std::string value = spec.get(config);
    const bool write = spec.write == WriteMode::kAlways ||
                       (spec.write == WriteMode::kWhenNotDefault && value != spec.get(defaults));
    if (write) absl::StrAppend(&out, spec.name, ": ", value, "\n");
  }
  return out;
}

std::string FormatResolvedConfig(const Config& config, const SourceMap& sources,
                                 const EffectiveValues& effective) {
  std::string out;
  for (const KeySpec& spec : Schema()) {
    if (spec.kind == KeyKind::kIgnored || spec.kind == KeyKind::kSection) continue;
    auto it = sources.find(std::string(spec.name));
    std::string origin = it == sources.end() ? "default" : DescribeOrigin(it->second);
    std::string value = spec.get(config);
    auto fallback = effective.find(std::string(spec.name));
    if (fallback != effective.end() && fallback->second.value != value) {
      absl::StrAppend(&origin, "; configured ", value, ", but ", fallback->second.reason);
      value = fallback->second.value;
    }
    if (value.empty()) value = "''";
    absl::StrAppend(&out, "  ", spec.name, ": ", value, "  # ", origin, "\n");
  }
  return out;
}

std::string JsonValue(const KeySpec& spec, const Config& config) {
  std::string text = spec.get(config);
  if (text.size() >= 2 && text.front() == '\'' && text.back() == '\'') {
    text = absl::StrReplaceAll(text.substr(1, text.size() - 2), {{"''", "'"}});
  }
  bool flag = false;
  switch (spec.kind) {
    case KeyKind::kBool:
      return ParseBool(text, &flag) && flag ? "true" : "false";
    case KeyKind::kInt:
    case KeyKind::kSeconds:
      return text;
    case KeyKind::kList:
      if (spec.name == "gpu_ids") return JsonQuote(text);
      return absl::StrCat("[", absl::StrReplaceAll(text, {{",", ", "}}), "]");
    case KeyKind::kString:
    case KeyKind::kEnum:
    case KeyKind::kSection:
    case KeyKind::kIgnored:
      break;
  }
  return text.empty() ? "null" : JsonQuote(text);
}

absl::Status WriteConfigFile(const std::string& path, const std::string& text) {
  const size_t slash = path.find_last_of('/');
  if (slash != std::string::npos) {
    absl::Status dirs = MakeDirs(path.substr(0, slash));
    if (!dirs.ok()) return dirs;
  }
  // A fresh temporary file (O_EXCL | O_NOFOLLOW, a random name) renamed into place: nothing
  // another user planted beside the config (a symlink named <path>.tmp.<pid>) is written through.
  if (const int err = safe_open::ReplaceFile(path, text, 0644); err != 0) {
    return absl::ErrnoToStatus(err, absl::StrCat("write ", path));
  }
  return absl::OkStatus();
}

}  // namespace accel::launcher
