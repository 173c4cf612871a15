#include "launcher/config/source.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"

namespace accel::launcher {

bool Accepted(const SourceMap& sources, const std::string& key) {
  auto it = sources.find(key);
  return it == sources.end() || it->second.kind != ValueOrigin::Kind::kRejected;
}

Diagnostic DiagnosticFor(const SourceMap& sources, const std::string& key, std::string message) {
  Diagnostic d;
  d.message = std::move(message);
  auto it = sources.find(key);
  if (it == sources.end()) return d;
  const ValueOrigin& origin = it->second;
  switch (origin.kind) {
    case ValueOrigin::Kind::kDefault:
    case ValueOrigin::Kind::kRejected:
      break;
    case ValueOrigin::Kind::kHardware:
      d.where = "defaults for this machine";
      break;
    case ValueOrigin::Kind::kFile:
      d.where = origin.where;
      d.line = origin.line;
      d.column = origin.column;
      d.line_text = origin.line_text;
      break;
    case ValueOrigin::Kind::kScheduler:
    case ValueOrigin::Kind::kEnvironment:
    case ValueOrigin::Kind::kCommandLine:
      d.where = origin.where;
      break;
  }
  return d;
}

std::string DescribeOrigin(const ValueOrigin& origin) {
  switch (origin.kind) {
    case ValueOrigin::Kind::kDefault:
      return "default";
    case ValueOrigin::Kind::kRejected:
      return "rejected";
    case ValueOrigin::Kind::kHardware:
      return "detected hardware";
    case ValueOrigin::Kind::kFile:
      return absl::StrCat(origin.where, ":", origin.line);
    case ValueOrigin::Kind::kScheduler:
    case ValueOrigin::Kind::kEnvironment:
    case ValueOrigin::Kind::kCommandLine:
      return origin.where;
  }
  return "default";
}

EnvLookup ProcessEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

EnvLookup FixedEnvironment(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace accel::launcher
