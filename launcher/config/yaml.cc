#include "launcher/config/yaml.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <exception>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/defaults.h"

namespace accel::launcher {
namespace {

YamlPos ToPos(const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0 || mark.column < 0) return {};
  return {mark.line + 1, mark.column + 1};
}

// Thrown by Convert when the tree grows past defaults::kMaxConfigYamlNodes: aliases share one
// node in yaml-cpp, but the converted tree copies every reference, so nested aliases multiply.
struct TooManyNodes {
  YamlPos pos;
};

YamlValue Convert(const YAML::Node& node, int& budget) {
  YamlValue value;
  value.pos = ToPos(node.Mark());
  if (--budget < 0) throw TooManyNodes{value.pos};
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      value.kind = YamlValue::Kind::kNull;
      break;
    case YAML::NodeType::Scalar:
      value.kind = YamlValue::Kind::kScalar;
      value.scalar = node.Scalar();
      value.quoted = node.Tag() == "!";
      break;
    case YAML::NodeType::Sequence:
      value.kind = YamlValue::Kind::kSequence;
      for (const YAML::Node& item : node) value.items.push_back(Convert(item, budget));
      break;
    case YAML::NodeType::Map:
      value.kind = YamlValue::Kind::kMap;
      for (const auto& entry : node) {
        YamlValue key = Convert(entry.first, budget);
        value.entries.emplace_back(std::move(key), Convert(entry.second, budget));
      }
      break;
  }
  return value;
}

}  // namespace

bool ParseYaml(std::string_view text, YamlValue* document, YamlError* error) {
  try {
    YAML::Node root = YAML::Load(std::string(text));
    int budget = defaults::kMaxConfigYamlNodes;
    *document = Convert(root, budget);
    return true;
  } catch (const TooManyNodes& e) {
    error->pos = e.pos;
    error->message = absl::StrCat("more than ", defaults::kMaxConfigYamlNodes,
                                  " values once aliases (*name) are expanded; a config file "
                                  "needs far fewer (nested aliases multiply)");
  } catch (const YAML::DeepRecursion& e) {
    error->pos = ToPos(e.mark);
    error->message = "nested too deeply";
  } catch (const YAML::Exception& e) {
    error->pos = ToPos(e.mark);
    error->message = e.msg;
  } catch (const std::exception& e) {
    error->pos = {};
    error->message = e.what();
  }
  return false;
}

}  // namespace accel::launcher
