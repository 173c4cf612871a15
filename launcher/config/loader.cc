#include "launcher/config/loader.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/defaults.h"
#include "launcher/config/schema.h"
#include "launcher/config/yaml.h"

namespace accel::launcher {
namespace {

using Kind = YamlValue::Kind;

class FileDiagnostics {
 public:
  FileDiagnostics(const std::string& path, absl::string_view text) : path_(path) {
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      lines_.emplace_back(line);
    }
  }

  std::string LineText(int line) const {
    return line >= 1 && line <= static_cast<int>(lines_.size()) ? lines_[line - 1] : "";
  }

  void Add(YamlPos pos, std::string message) {
    // A parser error at the end of the text points past the last line: show the last line
    // that has something on it instead.
    while (pos.line > 1 && LineText(pos.line).find_first_not_of(" \t") == std::string::npos) {
      --pos.line;
      pos.column = static_cast<int>(LineText(pos.line).size()) + 1;
    }
    Diagnostic d;
    d.where = path_;
    d.line = pos.line;
    d.column = pos.column;
    d.line_text = LineText(pos.line);
    d.message = std::move(message);
    problems_.push_back(std::move(d));
  }

  // Records that the repair inserted a character before `column` on `line`.
  void AddShift(int line, int column) { shifts_[line] = column; }

  // Maps a position in the repaired text back to the original text.
  YamlPos Original(YamlPos pos) const {
    auto it = shifts_.find(pos.line);
    if (it != shifts_.end() && pos.column > it->second) --pos.column;
    return pos;
  }

  std::vector<Diagnostic> Take() { return std::move(problems_); }

 private:
  std::string path_;
  std::vector<std::string> lines_;
  std::vector<Diagnostic> problems_;
  std::map<int, int> shifts_;  // line → column of an inserted space
};

// Finds block-mapping lines written "key:value" (YAML reads them as one plain scalar, not a
// key), reports each, and returns the text with the missing space inserted so that the rest of
// the file can still be checked.
std::string RepairMissingSpaces(absl::string_view text, FileDiagnostics* diagnostics) {
  std::string repaired;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (line_number > 1) repaired.push_back('\n');
    size_t i = 0;
    while (i < line.size() && line[i] == ' ') ++i;
    if (i + 1 < line.size() && line[i] == '-' && line[i + 1] == ' ') i += 2;
    const size_t key_start = i;
    while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) ||
                               line[i] == '_' || line[i] == '-' || line[i] == '.')) {
      ++i;
    }
    const bool missing_space = i > key_start && i + 1 < line.size() && line[i] == ':' &&
                               line[i + 1] != ' ' && line[i + 1] != '\t' && line[i + 1] != '\r' &&
                               line[i + 1] != ':' && line[i + 1] != '/' &&
                               std::isalpha(static_cast<unsigned char>(line[key_start]));
    if (!missing_space) {
      repaired.append(line.data(), line.size());
      continue;
    }
    const std::string key(line.substr(key_start, i - key_start));
    diagnostics->Add({line_number, static_cast<int>(i) + 2},
                     absl::StrCat("malformed YAML: missing space after ':' (write '", key, ": ",
                                  std::string(line.substr(i + 1)), "')"));
    diagnostics->AddShift(line_number, static_cast<int>(i) + 2);
    repaired.append(line.data(), i + 1);
    repaired.push_back(' ');
    repaired.append(line.data() + i + 1, line.size() - i - 1);
  }
  return repaired;
}

// The value's position; for an empty value (YAML places it at the next token) just after the
// key's colon.
YamlPos ValuePos(const YamlValue& key, const YamlValue& value) {
  if (value.pos.line > 0 && value.kind != YamlValue::Kind::kNull) return value.pos;
  return {key.pos.line, key.pos.column + static_cast<int>(key.scalar.size()) + 1};
}

}  // namespace

std::vector<Diagnostic> ApplyConfigText(const std::string& path, absl::string_view text,
                                        Config* config, SourceMap* sources, bool* empty) {
  FileDiagnostics diagnostics(path, text);
  const bool json = absl::EndsWith(path, ".json");
  const std::string repaired = json ? std::string(text) : RepairMissingSpaces(text, &diagnostics);
  YamlValue root;
  YamlError error;
  if (!ParseYaml(repaired, &root, &error)) {
    diagnostics.Add(diagnostics.Original(error.pos),
                    absl::StrCat(json ? "malformed JSON: " : "malformed YAML: ", error.message));
    return diagnostics.Take();
  }
  if (empty != nullptr) *empty = root.empty();
  if (root.kind == Kind::kNull) return diagnostics.Take();
  if (root.kind != Kind::kMap) {
    diagnostics.Add(diagnostics.Original(root.pos),
                    "expected a mapping of config keys (key: value per line)");
    return diagnostics.Take();
  }
  std::map<std::string, int> first_line;
  const std::vector<absl::string_view> names = KeyNames();
  for (const auto& [key, value] : root.entries) {
    if (key.kind != Kind::kScalar) {
      diagnostics.Add(key.pos, "expected a key name");
      continue;
    }
    const KeySpec* spec = FindKey(key.scalar);
    if (spec == nullptr || spec->name != key.scalar) {
      const std::string message = absl::StrCat("unknown key '", key.scalar, "'");
      diagnostics.Add(key.pos, spec != nullptr
                                   ? absl::StrCat(message, "; did you mean '", spec->name, "'?")
                                   : WithSuggestion(message, key.scalar, names));
      continue;
    }
    auto [it, inserted] = first_line.emplace(key.scalar, key.pos.line);
    if (!inserted) {
      diagnostics.Add(key.pos, absl::StrCat("duplicate key '", key.scalar, "' (first set on line ",
                                            it->second, ")"));
      continue;
    }
    if (value.kind == Kind::kNull) continue;  // null, ~ or nothing: unset, the default stays
    const YamlPos pos = diagnostics.Original(ValuePos(key, value));
    Config updated = *config;
    const absl::Status status = spec->set(value, &updated);
    if (!status.ok()) {
      diagnostics.Add(pos, absl::StrCat(spec->name, ": ", status.message()));
      (*sources)[std::string(spec->name)].kind = ValueOrigin::Kind::kRejected;
      continue;
    }
    *config = std::move(updated);
    ValueOrigin origin;
    origin.kind = ValueOrigin::Kind::kFile;
    origin.where = path;
    origin.line = pos.line;
    origin.column = pos.column;
    origin.line_text = diagnostics.LineText(pos.line);
    (*sources)[std::string(spec->name)] = std::move(origin);
  }
  return diagnostics.Take();
}

std::vector<Diagnostic> ApplyConfigFile(const std::string& path, Config* config, SourceMap* sources,
                                        bool* empty) {
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) {
    Diagnostic d;
    d.where = path;
    d.message = "read config file: Is a directory";
    return {d};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    Diagnostic d;
    d.where = path;
    d.message = absl::StrCat("read config file: ", std::strerror(errno));
    return {d};
  }
  // Reads at most one byte past the limit: a huge file (or /dev/zero) is refused unread.
  std::string text(static_cast<std::size_t>(defaults::kMaxConfigFileBytes) + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (static_cast<std::int64_t>(text.size()) > defaults::kMaxConfigFileBytes) {
    Diagnostic d;
    d.where = path;
    d.message =
        absl::StrCat("read config file: larger than ", defaults::kMaxConfigFileBytes,
                     " bytes; a config file is a few hundred bytes (is this the right file?)");
    return {d};
  }
  std::vector<Diagnostic> problems = ApplyConfigText(path, text, config, sources, empty);
  // A relative rdzv_token_file in a file names a file next to it: copying the config and its
  // token file together is all another machine needs.
  const std::size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string& token_file = config->rdzv_token_file;
  if (!token_file.empty() && token_file.front() != '/') {
    token_file = absl::StrCat(dir, token_file);
  } else if (token_file.empty()) {
    const std::string beside = absl::StrCat(dir, kTokenFileName);
    if (std::filesystem::is_regular_file(beside, ignored)) token_file = beside;
  }
  return problems;
}

}  // namespace accel::launcher
