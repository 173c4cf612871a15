#include "launcher/process/failure_report.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/exit_codes.h"

namespace accel::launcher {
namespace {

// Parses the JSON string starting at json[pos] == '"'; returns its unescaped value.
std::string ParseJsonString(absl::string_view json, std::size_t pos) {
  std::string out;
  for (std::size_t i = pos + 1; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '"') {
      return out;
    }
    if (c != '\\' || i + 1 >= json.size()) {
      out.push_back(c);
      continue;
    }
    const char e = json[++i];
    switch (e) {
      case 'n':
        out.push_back('\n');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'b':
      case 'f':
        break;
      case 'u':
        out.push_back('?');  // non-ASCII escapes are shown as '?'
        i += std::min<std::size_t>(4, json.size() - i - 1);
        break;
      default:
        out.push_back(e);  // \" \\ \/
    }
  }
  return out;
}

std::string OneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  if (text.size() > 200) {
    text = text.substr(0, 197) + "...";
  }
  return text;
}

}  // namespace

std::string JsonStringField(absl::string_view json, absl::string_view key) {
  const std::string quoted = absl::StrCat("\"", key, "\"");
  for (std::size_t pos = json.find(quoted); pos != absl::string_view::npos;
       pos = json.find(quoted, pos + 1)) {
    std::size_t i = pos + quoted.size();
    while (i < json.size() && (json[i] == ' ' || json[i] == '\t' || json[i] == '\n')) {
      ++i;
    }
    if (i >= json.size() || json[i] != ':') {
      continue;
    }
    ++i;
    while (i < json.size() && (json[i] == ' ' || json[i] == '\t' || json[i] == '\n')) {
      ++i;
    }
    if (i < json.size() && json[i] == '"') {
      return ParseJsonString(json, i);
    }
    return "";
  }
  return "";
}

std::string ReadErrorFileMessage(const std::string& path) {
  if (path.empty()) {
    return "";
  }
  std::ifstream in(path);
  if (!in) {
    return "";
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return JsonStringField(buffer.str(), "message");
}

void SortRootCauseFirst(std::vector<WorkerFailure>* failures) {
  std::stable_sort(failures->begin(), failures->end(),
                   [](const WorkerFailure& a, const WorkerFailure& b) { return a.time < b.time; });
}

std::string FormatFailureReport(const std::vector<WorkerFailure>& failures,
                                absl::string_view title) {
  std::string out = absl::StrCat(title, "\n");
  const bool any_worker = std::any_of(failures.begin(), failures.end(),
                                      [](const WorkerFailure& f) { return f.rank >= 0; });
  if (any_worker) {
    absl::StrAppendFormat(&out, "  %-10s %-7s %-16s %-5s %-5s %-8s %-22s %s\n", "", "machine",
                          "host", "rank", "local", "pid", "exit", "time (UTC)");
  }
  for (std::size_t i = 0; i < failures.size(); ++i) {
    const WorkerFailure& f = failures[i];
    const char* label = i == 0 ? "root cause" : "also";
    if (f.rank < 0) {  // a machine, not a worker: its message is the row
      absl::StrAppendFormat(&out, "  %-10s %s\n", label, DescribeMachineCause(f));
      continue;
    }
    absl::StrAppendFormat(
        &out, "  %-10s %-7d %-16s %-5d %-5s %-8s %-22s %s\n", label, f.machine_rank,
        f.host.empty() ? "?" : f.host, f.rank, f.local_rank >= 0 ? absl::StrCat(f.local_rank) : "?",
        f.pid > 0 ? absl::StrCat(f.pid) : "?",
        // a hang reported before its teardown: it had not exited then
        absl::StartsWith(f.detail, "hang") && f.exit.ok() ? "hung" : DescribeExit(f.exit),
        absl::FormatTime("%H:%M:%E3S", f.time, absl::UTCTimeZone()));
  }
  for (const WorkerFailure& f : failures) {
    if (f.rank < 0) {
      continue;
    }
    if (!f.detail.empty()) {
      absl::StrAppend(&out, "  rank ", f.rank, ": ", f.detail, "\n");
    }
    if (!f.error_message.empty()) {
      absl::StrAppend(&out, "  rank ", f.rank, " error file: ", OneLine(f.error_message), "\n");
    }
    if (!f.stderr_tail.empty()) {
      absl::StrAppend(&out, "  rank ", f.rank, " stderr (last ", f.stderr_tail.size(),
                      " lines):\n");
      for (const std::string& line : f.stderr_tail) {
        absl::StrAppend(&out, "    | ", line, "\n");
      }
    }
  }
  return out;
}

std::string DescribeMachineCause(const WorkerFailure& f) {
  if (absl::StartsWith(f.detail, absl::StrCat("machine ", f.machine_rank))) {
    return f.detail;
  }
  return absl::StrCat("machine ", f.machine_rank, f.host.empty() ? "" : " (host " + f.host + ")",
                      ": ", f.detail.empty() ? "failed" : f.detail);
}

std::string DescribeCause(const WorkerFailure& f) {
  if (f.rank < 0) {
    return DescribeMachineCause(f);
  }
  const bool hang = absl::StartsWith(f.detail, "hang");
  return absl::StrCat("rank ", f.rank, " on machine ", f.machine_rank,
                      f.host.empty() ? "" : absl::StrCat(" (host ", f.host, ")"), ": ",
                      hang ? f.detail : DescribeExit(f.exit));
}

}  // namespace accel::launcher
