// The yaml-cpp adapter: parses YAML text into a small tree with 1-based
// positions, so that no other file sees yaml-cpp or its exceptions.
#ifndef ACCEL_LAUNCHER_CONFIG_YAML_H_
#define ACCEL_LAUNCHER_CONFIG_YAML_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace accel::launcher {

// 1-based line and column; 0 means "no position".
struct YamlPos {
  int line = 0;
  int column = 0;
};

// One YAML node. Scalars keep their text exactly as written (quotes removed).
struct YamlValue {
  enum class Kind { kNull, kScalar, kSequence, kMap };
  Kind kind = Kind::kNull;
  std::string scalar;   // kScalar
  bool quoted = false;  // kScalar written in quotes ('no' is a string, no is a boolean)
  YamlPos pos;
  std::vector<YamlValue> items;                          // kSequence
  std::vector<std::pair<YamlValue, YamlValue>> entries;  // kMap, in file order (duplicates kept)

  bool empty() const {
    return kind == Kind::kNull || (kind == Kind::kScalar && scalar.empty()) ||
           (kind == Kind::kSequence && items.empty()) || (kind == Kind::kMap && entries.empty());
  }
};

struct YamlError {
  YamlPos pos;
  std::string message;  // the parser's words, e.g. "end of map not found"
};

// Parses one YAML document. Returns false and fills `error` when the text is malformed; an
// empty document yields a kNull value.
bool ParseYaml(std::string_view text, YamlValue* document, YamlError* error);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_YAML_H_
