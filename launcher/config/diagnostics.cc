#include "launcher/config/diagnostics.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/printable.h"

namespace accel::launcher {
namespace {

std::string Normalize(absl::string_view word) {
  std::string out;
  out.reserve(word.size());
  for (char c : word) {
    out.push_back(c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

// Longest `where` and longest part of a source line shown: a binary or one-line file is cut, not
// dumped. A message is ours, with at most a few values quoted in it: it gets more room.
constexpr std::size_t kMaxShownBytes = 160;
constexpr std::size_t kMaxShownMessageBytes = 1024;

// Whether `ch` continues a UTF-8 character (is not the first byte of one).
bool Continues(char ch) { return (static_cast<unsigned char>(ch) & 0xC0u) == 0x80u; }

// Returns `text` Printable, cut after `limit` bytes (on a character boundary) with what was cut.
std::string Shown(std::string_view text, std::size_t limit = kMaxShownBytes) {
  if (text.size() <= limit) return Printable(text);
  std::size_t end = limit;
  while (end > 0 && Continues(text[end])) --end;
  return absl::StrCat(Printable(text.substr(0, end)), "... (", text.size() - end, " more bytes)");
}

}  // namespace

std::string FormatDiagnostic(const Diagnostic& d) {
  // Every part may hold bytes from the file or the environment: none reaches the terminal raw,
  // and a long one (a binary file's "line") is cut.
  std::string out;
  if (!d.where.empty()) {
    absl::StrAppend(&out, Shown(d.where), ":");
    if (d.line > 0) absl::StrAppend(&out, d.line, ":", std::max(d.column, 1), ":");
    out += " ";
  }
  out += Shown(d.message, kMaxShownMessageBytes);
  if (d.line > 0 && !d.line_text.empty()) {
    const std::string_view line = d.line_text;
    const std::size_t column = static_cast<std::size_t>(std::max(d.column, 1)) - 1;
    // The part of the line around the column, at most kMaxShownBytes, on character boundaries.
    std::size_t start =
        std::min(column > kMaxShownBytes / 2 ? column - kMaxShownBytes / 2 : 0, line.size());
    while (start < line.size() && start < column && Continues(line[start])) ++start;
    std::size_t end = std::min(line.size(), start + kMaxShownBytes);
    while (end > start && end < line.size() && Continues(line[end])) --end;
    const std::string cut = start > 0 ? "..." : "";
    absl::StrAppend(&out, "\n", cut, Printable(line.substr(start, end - start)),
                    end < line.size() ? "..." : "", "\n");
    // The caret goes under the column's character as printed (escapes widen the line); tabs
    // are kept so it lines up on any terminal.
    std::string before = cut;
    before += Printable(line.substr(start, std::min(column, end) - std::min(start, column)));
    for (char ch : before) {
      if (Continues(ch)) continue;  // inside a character
      out.push_back(ch == '\t' ? '\t' : ' ');
    }
    if (column > end) out.append(column - end, ' ');
    out.push_back('^');
  }
  return out;
}

std::string FormatDiagnostics(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) absl::StrAppend(&out, FormatDiagnostic(d), "\n");
  return out;
}

int EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string ClosestMatch(absl::string_view word, const std::vector<absl::string_view>& candidates) {
  const std::string normalized = Normalize(word);
  const int limit = std::max(2, static_cast<int>(normalized.size() / 4));
  std::string best;
  int best_distance = limit + 1;
  for (absl::string_view candidate : candidates) {
    const int distance = EditDistance(normalized, Normalize(candidate));
    if (distance < best_distance) {
      best_distance = distance;
      best = std::string(candidate);
    }
  }
  return best;
}

std::string WithSuggestion(std::string message, absl::string_view word,
                           const std::vector<absl::string_view>& candidates) {
  const std::string match = ClosestMatch(word, candidates);
  if (!match.empty()) absl::StrAppend(&message, "; did you mean '", match, "'?");
  return message;
}

}  // namespace accel::launcher
