#include "launcher/config/accelerate_args.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <regex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "launcher/config/values.h"

namespace accel::launcher {
namespace {

AccelerateArg Str(std::string text) {
  AccelerateArg arg;
  arg.truthy = !text.empty();
  arg.str = std::move(text);
  return arg;
}

AccelerateArg Bool(bool value) {
  AccelerateArg arg;
  arg.str = value ? "True" : "False";
  arg.truthy = value;
  return arg;
}

// Python's int() of decimal text (sign, digits, underscores between digits): the digits.
bool PyInt(absl::string_view text, std::string* out) {
  static const std::regex kInt("[-+]?[0-9](_?[0-9])*");
  const std::string s(absl::StripAsciiWhitespace(text));
  if (!std::regex_match(s, kInt)) return false;
  std::string digits;
  for (char c : s) {
    if (c != '_' && c != '+') digits.push_back(c);
  }
  const bool negative = !digits.empty() && digits[0] == '-';
  std::string body = negative ? digits.substr(1) : digits;
  body.erase(0, std::min(body.find_first_not_of('0'), body.size() - 1));
  *out = (negative && body != "0") ? absl::StrCat("-", body) : body;
  return true;
}

bool PyFloat(absl::string_view text, double* out) {
  const std::string s(absl::StripAsciiWhitespace(text));
  if (s.empty()) return false;
  const std::string lower = absl::AsciiStrToLower(s);
  if (lower == "inf" || lower == "+inf" || lower == "infinity")
    *out = HUGE_VAL;
  else if (lower == "-inf" || lower == "-infinity")
    *out = -HUGE_VAL;
  else if (lower == "nan")
    *out = std::nan("");
  else
    return absl::SimpleAtod(s, out) && s.find_first_of("xX") == std::string::npos;
  return true;
}

AccelerateArg Float(double value) {
  AccelerateArg arg;
  arg.str = PyFloatRepr(value);
  arg.truthy = value != 0;
  return arg;
}

// accelerate's str_to_bool: 1 for y/yes/t/true/on/1, 0 for n/no/f/false/off/0.
bool StrToBool(absl::string_view text, int* out) {
  const std::string lower = absl::AsciiStrToLower(text);
  for (const char* word : {"y", "yes", "t", "true", "on", "1"}) {
    if (lower == word) *out = 1;
  }
  for (const char* word : {"n", "no", "f", "false", "off", "0"}) {
    if (lower == word) *out = 0;
  }
  return lower == "y" || lower == "yes" || lower == "t" || lower == "true" || lower == "on" ||
         lower == "1" || lower == "n" || lower == "no" || lower == "f" || lower == "false" ||
         lower == "off" || lower == "0";
}

// Sets args.`name` from an option's text, converted as argparse's `type=` does.
absl::Status SetOption(const AccelerateOption& option, const std::string& text, Config* c) {
  AccelerateArg arg;
  switch (option.type) {
    case PyType::kStr:
      arg = Str(text);
      break;
    case PyType::kInt: {
      std::string digits;
      if (!PyInt(text, &digits)) {
        return absl::InvalidArgumentError(absl::StrCat("expected an integer, got '", text, "'"));
      }
      arg = Str(digits);
      arg.truthy = digits != "0";
      break;
    }
    case PyType::kFloat: {
      double value = 0;
      if (!PyFloat(text, &value)) {
        return absl::InvalidArgumentError(absl::StrCat("expected a number, got '", text, "'"));
      }
      arg = Float(value);
      break;
    }
    case PyType::kBool:  // argparse's type=bool: any non-empty text is True
      arg = Bool(!text.empty());
      break;
    case PyType::kStrToBool: {
      int value = 0;
      if (!StrToBool(text, &value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("expected a truth value (true/false, yes/no, 1/0), got '", text, "'"));
      }
      arg = Str(absl::StrCat(value));
      arg.truthy = value != 0;
      break;
    }
    case PyType::kSwitch:
      arg = Bool(true);
      break;
    case PyType::kTuple: {  // "a,b,c", each read by str_to_bool
      std::vector<std::string> items;
      for (absl::string_view item : absl::StrSplit(text, ',')) {
        int value = 0;
        if (!StrToBool(item, &value)) {
          return absl::InvalidArgumentError(
              absl::StrCat("expected truth values separated by commas (fprop,dgrad,wgrad), e.g. "
                           "false,false,true, got '",
                           text, "'"));
        }
        items.push_back(absl::StrCat(value));
      }
      arg = Str(absl::StrCat("(", absl::StrJoin(items, ", "), items.size() == 1 ? ",)" : ")"));
      break;
    }
  }
  c->fp8_config_file_args.erase(std::string(option.name));
  c->accelerate_args[std::string(option.name)] = std::move(arg);
  return absl::OkStatus();
}

}  // namespace

std::string PyFloatRepr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  // The shortest digits that read back as `value`, then Python's layout: positional for
  // exponents -5 < e < 16, else d.ddde+XX.
  auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  if (ec != std::errc()) return absl::StrCat(value);
  const std::string sci(buffer, end);
  const size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  const int exponent = std::atoi(sci.c_str() + e_pos + 1);
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char ch : mantissa) {
    if (ch != '.') digits.push_back(ch);
  }
  std::string out;
  if (exponent < -4 || exponent >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) absl::StrAppend(&out, ".", digits.substr(1));
    absl::StrAppend(&out, "e", exponent < 0 ? "-" : "+", exponent < 10 && exponent > -10 ? "0" : "",
                    std::abs(exponent));
  } else if (exponent < 0) {
    out = absl::StrCat("0.", std::string(static_cast<size_t>(-exponent - 1), '0'), digits);
  } else if (static_cast<int>(digits.size()) <= exponent + 1) {
    out = absl::StrCat(digits, std::string(static_cast<size_t>(exponent + 1) - digits.size(), '0'),
                       ".0");
  } else {
    out = absl::StrCat(digits.substr(0, static_cast<size_t>(exponent + 1)), ".",
                       digits.substr(static_cast<size_t>(exponent + 1)));
  }
  return negative ? absl::StrCat("-", out) : out;
}

AccelerateArg PyFromYaml(const YamlValue& value) {
  if (value.kind == YamlValue::Kind::kNull) return ArgOrDefault({}, 0, "");
  const std::string& s = value.scalar;
  if (value.quoted) return Str(s);
  static const std::regex kTrue("y|Y|yes|Yes|YES|true|True|TRUE|on|On|ON");
  static const std::regex kFalse("n|N|no|No|NO|false|False|FALSE|off|Off|OFF");
  static const std::regex kNull("~|null|Null|NULL|");
  static const std::regex kFloat(
      "[-+]?([0-9][0-9_]*)?\\.[0-9_]*([eE][-+][0-9]+)?|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)");
  if (std::regex_match(s, kTrue)) return Bool(true);
  if (std::regex_match(s, kFalse)) return Bool(false);
  if (std::regex_match(s, kNull)) return ArgOrDefault({}, 0, "");
  std::string digits;
  if (PyInt(s, &digits) && (s.size() < 2 || s[0] != '0' || s == "0")) {
    AccelerateArg arg = Str(digits);
    arg.truthy = digits != "0";
    return arg;
  }
  double number = 0;
  if (std::regex_match(s, kFloat) && s != "." &&
      PyFloat(absl::StrReplaceAll(s, {{"_", ""}}), &number)) {
    return Float(number);
  }
  return Str(s);
}

absl::Status SetAccelerateSection(const YamlValue& value, absl::string_view section,
                                  Config* config) {
  if (value.kind == YamlValue::Kind::kScalar && !value.quoted &&
      value.scalar.find('=') != std::string::npos) {
    const std::string name = value.scalar.substr(0, value.scalar.find('='));
    const AccelerateOption* option = FindAccelerateOption(name);
    if (option == nullptr || option->section != section) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " is not an option of ", section));
    }
    return SetOption(*option, value.scalar.substr(name.size() + 1), config);
  }
  if (value.empty()) return absl::OkStatus();
  if (value.kind != YamlValue::Kind::kMap) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a mapping, got ", values::Describe(value)));
  }
  for (const auto& [key, entry] : value.entries) {
    if (entry.kind == YamlValue::Kind::kSequence) {  // a tuple, e.g. override_linear_precision
      std::vector<std::string> items;
      for (const YamlValue& item : entry.items) {
        if (item.kind != YamlValue::Kind::kScalar) {
          return absl::InvalidArgumentError(
              absl::StrCat(key.scalar, ": expected a list of single values"));
        }
        items.push_back(PyFromYaml(item).str);
      }
      std::string name = key.scalar;
      if (section == "fp8_config" && !absl::StartsWith(name, "fp8")) name = "fp8_" + name;
      config->accelerate_args[name] = Str(absl::StrCat("(", absl::StrJoin(items, ", "), ")"));
      if (section == "fp8_config") config->fp8_config_file_args.insert(name);
      continue;
    }
    if (entry.kind == YamlValue::Kind::kMap) {
      return absl::InvalidArgumentError(absl::StrCat(
          key.scalar, ": expected a single value (accelerate passes it to the script as text)"));
    }
    std::string name = key.scalar;
    if (section == "fsdp_config" && !absl::StartsWith(name, "fsdp")) name = "fsdp_" + name;
    if (section == "fp8_config" && !absl::StartsWith(name, "fp8")) name = "fp8_" + name;
    config->accelerate_args[name] = PyFromYaml(entry);
    if (section == "fp8_config") config->fp8_config_file_args.insert(name);
    if (section == "deepspeed_config") config->deepspeed_config_keys.push_back(key.scalar);
  }
  if (section == "parallelism_config") config->use_parallelism_config = true;
  return absl::OkStatus();
}

absl::Status SetAccelerateVersion(const YamlValue& value, std::string* version) {
  static const std::regex kVersion("v?([0-9]+)\\.([0-9]+)(\\.[0-9]+)?([.a-z0-9+]*)");
  std::smatch match;
  const std::string text = value.kind == YamlValue::Kind::kScalar ? value.scalar : "";
  if (!std::regex_match(text, match, kVersion)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a release like 1.14 or 0.20.3, got '", text, "'"));
  }
  const int major = std::atoi(match[1].str().c_str());
  const int minor = std::atoi(match[2].str().c_str());
  if (major == 0 && minor < 15) {
    return absl::InvalidArgumentError(absl::StrCat(
        "accelerate ", text,
        " is older than the releases accel-launch knows (0.15 .. 1.14); set 0.15, the nearest"));
  }
  *version = absl::StrCat(major, ".", minor);
  return absl::OkStatus();
}

bool ParseAcceleratePlugin(absl::string_view text, std::string* plugin) {
  for (const char* name : {"FSDP", "DEEPSPEED", "MEGATRON_LM"}) {
    if (absl::EqualsIgnoreCase(text, name)) {
      *plugin = name;
      return true;
    }
  }
  return false;
}

}  // namespace accel::launcher

namespace accel::launcher {

std::vector<std::pair<std::string, std::string>> AccelerateProblems(const Config& config) {
  std::vector<std::pair<std::string, std::string>> problems;
  if (config.accelerate_plugin == "DEEPSPEED" && config.num_machines > 1) {
    const AccelerateArg launcher = ArgOrDefault(config, "deepspeed_multinode_launcher");
    if (!launcher.none && launcher.str != "standard") {
      problems.emplace_back(
          "deepspeed_config",
          absl::StrCat("deepspeed_multinode_launcher ", launcher.str,
                       ": accel-launch starts every machine itself (one accel-launch per machine, "
                       "as DeepSpeed's `standard` launcher); set deepspeed_multinode_launcher: "
                       "standard and run accel-launch on each machine (or under Slurm or "
                       "mpirun) instead of a ",
                       launcher.str, " hostfile"));
    }
  }
  if (config.accelerate_plugin == "FSDP" &&
      ArgOrDefault(config, "fsdp_cpu_ram_efficient_loading").truthy &&
      !ArgOrDefault(config, "fsdp_sync_module_states").truthy) {
    problems.emplace_back("fsdp_config",
                          "fsdp_cpu_ram_efficient_loading needs fsdp_sync_module_states: true "
                          "(accelerate launch refuses it too); set fsdp_sync_module_states: true");
  }
  return problems;
}

}  // namespace accel::launcher
