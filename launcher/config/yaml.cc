#include "launcher/config/yaml.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <exception>
#include <string>

namespace accel::launcher {
namespace {

YamlPos ToPos(const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0 || mark.column < 0) return {};
  return {mark.line + 1, mark.column + 1};
}

YamlValue Convert(const YAML::Node& node) {
  YamlValue value;
  value.pos = ToPos(node.Mark());
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
      for (const YAML::Node& item : node) value.items.push_back(Convert(item));
      break;
    case YAML::NodeType::Map:
      value.kind = YamlValue::Kind::kMap;
      for (const auto& entry : node) {
        value.entries.emplace_back(Convert(entry.first), Convert(entry.second));
      }
      break;
  }
  return value;
}

}  // namespace

bool ParseYaml(std::string_view text, YamlValue* document, YamlError* error) {
  try {
    YAML::Node root = YAML::Load(std::string(text));
    *document = Convert(root);
    return true;
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
