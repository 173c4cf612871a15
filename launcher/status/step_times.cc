#include "launcher/status/step_times.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/safe_file.h"

namespace accel::launcher {
namespace {

constexpr char kHeader[] = "time_s,rank,machine,step,steps,work_s,interval_s";

template <typename T>
T Median(std::vector<T> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Returns `value` quoted for a gnuplot string ('' doubles a quote).
std::string GnuplotQuote(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

}  // namespace

absl::StatusOr<StepTimesWriter> StepTimesWriter::Open(const std::string& path, mode_t mode) {
  const std::size_t slash = path.rfind('/');
  absl::StatusOr<UniqueFd> dir = OpenOwnDir(
      slash == std::string::npos ? "." : path.substr(0, std::max<std::size_t>(slash, 1)));
  if (!dir.ok()) return dir.status();
  absl::StatusOr<UniqueFd> opened = OpenAppendAt(
      dir->get(), slash == std::string::npos ? path : path.substr(slash + 1), mode, path);
  if (!opened.ok()) return opened.status();
  UniqueFd fd = *std::move(opened);
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && st.st_size == 0) {
    const std::string header = absl::StrCat(kHeader, "\n");
    if (::write(fd.get(), header.data(), header.size()) < 0) {
      return absl::ErrnoToStatus(errno, absl::StrCat("write step times ", path));
    }
  }
  return StepTimesWriter(std::move(fd));
}

absl::Status StepTimesWriter::Append(double time_s, const std::vector<RankStatus>& ranks) {
  std::string out;
  for (const RankStatus& r : ranks) {
    if (!r.reports_progress || r.interval_s <= 0) continue;
    absl::StrAppend(&out, absl::StrFormat("%.3f,%d,%d,%d,%d,%.6f,%.3f\n", time_s, r.rank,
                                          r.machine_rank, static_cast<long long>(r.step),
                                          static_cast<long long>(r.interval_steps),
                                          r.interval_work_s, r.interval_s));
  }
  if (out.empty()) return absl::OkStatus();
  if (::write(fd_.get(), out.data(), out.size()) != static_cast<ssize_t>(out.size())) {
    return absl::ErrnoToStatus(errno, "write step times");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<StepTimeRow>> ParseStepTimes(const std::string& text) {
  std::vector<StepTimeRow> rows;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripTrailingAsciiWhitespace(line);
    if (line.empty() || line == kHeader) continue;
    std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    StepTimeRow r;
    if (f.size() != 7 || !absl::SimpleAtod(f[0], &r.time_s) || !absl::SimpleAtoi(f[1], &r.rank) ||
        !absl::SimpleAtoi(f[2], &r.machine_rank) || !absl::SimpleAtoi(f[3], &r.step) ||
        !absl::SimpleAtoi(f[4], &r.steps) || !absl::SimpleAtod(f[5], &r.work_s) ||
        !absl::SimpleAtod(f[6], &r.interval_s)) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", number, ": expected ", kHeader, ", got '", line, "'"));
    }
    rows.push_back(r);
  }
  return rows;
}

HeatMap MakeHeatMap(const std::vector<StepTimeRow>& rows) {
  HeatMap map;
  if (rows.empty()) return map;
  std::vector<double> intervals;
  std::map<int, int> index;
  double end = 0;
  for (const StepTimeRow& r : rows) {
    intervals.push_back(r.interval_s);
    index.emplace(r.rank, 0);
    end = std::max(end, r.time_s);
  }
  map.bin_s = std::max(0.1, Median(intervals));
  for (auto& [rank, i] : index) {
    i = static_cast<int>(map.ranks.size());
    map.ranks.push_back(rank);
  }
  const std::size_t bins = static_cast<std::size_t>(end / map.bin_s) + 1;
  std::vector<std::vector<double>> cells(map.ranks.size(), std::vector<double>(bins, -1));
  for (const StepTimeRow& r : rows) {
    cells[index[r.rank]][static_cast<std::size_t>(r.time_s / map.bin_s)] = r.work_s;
  }
  for (auto& row : cells) {
    double previous = 0;
    for (double& cell : row) {
      if (cell < 0) cell = previous;
      previous = cell;
    }
  }
  map.cells = std::move(cells);
  return map;
}

int HottestRank(const HeatMap& map) {
  int hottest = -1;
  double most = -1;
  for (std::size_t i = 0; i < map.ranks.size(); ++i) {
    // From the rank's first work on: the bins before it (start-up, joining) are no work, not
    // typical work, and a start-up longer than the slow spell would hide a straggler.
    const std::vector<double>& row = map.cells[i];
    const auto first = std::find_if(row.begin(), row.end(), [](double w) { return w > 0; });
    if (first == row.end()) continue;
    const double median = Median(std::vector<double>(first, row.end()));
    if (median > most) {
      most = median;
      hottest = map.ranks[i];
    }
  }
  return hottest;
}

std::string HeatMapData(const HeatMap& map) {
  std::string out;
  const std::size_t bins = map.cells.empty() ? 0 : map.cells[0].size();
  for (std::size_t b = 0; b < bins; ++b) {
    for (std::size_t i = 0; i < map.ranks.size(); ++i) {
      absl::StrAppend(
          &out, absl::StrFormat("%.3f %d %.6f\n", b * map.bin_s, map.ranks[i], map.cells[i][b]));
    }
    out += "\n";
  }
  return out;
}

std::string HeatMapScript(const HeatMap& map, const std::string& data_path,
                          const std::string& png_path, const std::string& title) {
  const int rows = static_cast<int>(map.ranks.size());
  return absl::StrCat(
      "set terminal png size 1000,", std::clamp(160 + 28 * rows, 300, 1400), "\n", "set output ",
      GnuplotQuote(png_path), "\n", "set title ", GnuplotQuote(title), " noenhanced\n",
      "set xlabel 'time (s)'\n", "set ylabel 'rank'\n",
      "set cblabel 'own work per step (s): step time minus time in collectives'\n", "set ytics 1\n",
      "set yrange [", map.ranks.empty() ? -0.5 : map.ranks.front() - 0.5, ":",
      map.ranks.empty() ? 0.5 : map.ranks.back() + 0.5, "]\n",
      "set palette defined (0 '#ffffff', 1 '#ffd24d', 2 '#e8590c', 3 '#8b0000')\n", "plot ",
      GnuplotQuote(data_path), " using 1:2:3 with image notitle\n");
}

}  // namespace accel::launcher
