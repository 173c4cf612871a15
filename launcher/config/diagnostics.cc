#include "launcher/config/diagnostics.h"

#include <algorithm>
#include <cctype>

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

}  // namespace

std::string FormatDiagnostic(const Diagnostic& d) {
  // Every part may hold bytes from the file or the environment: none reaches the terminal raw.
  std::string out;
  if (!d.where.empty()) {
    absl::StrAppend(&out, Printable(d.where), ":");
    if (d.line > 0) absl::StrAppend(&out, d.line, ":", std::max(d.column, 1), ":");
    out += " ";
  }
  out += Printable(d.message);
  if (d.line > 0 && !d.line_text.empty()) {
    absl::StrAppend(&out, "\n", Printable(d.line_text), "\n");
    // The caret goes under the column's character as printed (escapes widen the line); tabs
    // are kept so it lines up on any terminal.
    const std::size_t column = static_cast<std::size_t>(std::max(d.column, 1)) - 1;
    const std::string before =
        Printable(std::string_view(d.line_text).substr(0, std::min(column, d.line_text.size())));
    for (char ch : before) {
      if ((static_cast<unsigned char>(ch) & 0xC0u) == 0x80u) continue;  // inside a character
      out.push_back(ch == '\t' ? '\t' : ' ');
    }
    if (column > d.line_text.size()) out.append(column - d.line_text.size(), ' ');
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
