#include "launcher/commands/report_command.h"

#include <glob.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/defaults.h"
#include "common/exit_codes.h"
#include "launcher/process/subprocess.h"
#include "launcher/status/step_times.h"

namespace accel::launcher {
namespace {

bool IsFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::trunc);
  file << text;
  file.close();
  if (!file) return absl::UnavailableError(absl::StrCat("write ", path));
  return absl::OkStatus();
}

// Runs gnuplot on `script`; returns why it failed.
absl::Status Plot(const std::string& script, const std::string& path_env) {
  absl::StatusOr<std::string> gnuplot = ResolveProgram("gnuplot", path_env);
  if (!gnuplot.ok()) {
    return absl::NotFoundError("gnuplot not found on PATH (Debian: apt-get install gnuplot-nox)");
  }
  SpawnSpec spec;
  spec.label = "gnuplot";
  spec.path = *gnuplot;
  spec.argv = {"gnuplot", script};
  absl::StatusOr<ChildProcess> child = Spawn(spec);
  if (!child.ok()) return child.status();
  absl::StatusOr<ExitStatus> exit =
      WaitForExit(*child, absl::FromChrono(defaults::kReportPlotTimeout), "gnuplot");
  if (!exit.ok()) return exit.status();
  if (!exit->ok()) return absl::InternalError(absl::StrCat("gnuplot: ", DescribeExit(*exit)));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> FindStepTimes(const std::string& log_dir) {
  const std::string direct = absl::StrCat(log_dir, "/", kStepTimesFile);
  if (IsFile(direct)) return direct;
  glob_t found{};
  std::string newest;
  long long newest_time = -1;
  if (::glob(absl::StrCat(log_dir, "/*/", kStepTimesFile).c_str(), 0, nullptr, &found) == 0) {
    for (std::size_t i = 0; i < found.gl_pathc; ++i) {
      struct stat st {};
      if (::stat(found.gl_pathv[i], &st) == 0 && st.st_mtime > newest_time) {
        newest_time = st.st_mtime;
        newest = found.gl_pathv[i];
      }
    }
  }
  ::globfree(&found);
  if (newest.empty()) {
    return absl::NotFoundError(absl::StrCat("no ", kStepTimesFile, " in ", log_dir,
                                            " or its run directories (machine 0 writes it "
                                            "while a job with a log_dir runs)"));
  }
  return newest;
}

int RunReportCommand(const ReportRequest& request, std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::string> csv = FindStepTimes(request.log_dir);
  if (!csv.ok()) {
    err << "accel-launch report: " << csv.status().message() << "\n";
    return kExitUsage;
  }
  std::ifstream in(*csv);
  std::ostringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::vector<StepTimeRow>> rows = ParseStepTimes(text.str());
  if (!rows.ok() || rows->empty()) {
    err << "accel-launch report: " << *csv << ": "
        << (rows.ok() ? "no rows yet" : rows.status().message()) << "\n";
    return kExitUsage;
  }
  const HeatMap map = MakeHeatMap(*rows);
  const std::string dir = csv->substr(0, csv->rfind('/'));
  const std::string data = absl::StrCat(dir, "/step_times.dat");
  const std::string script = absl::StrCat(dir, "/step_times.gp");
  const std::string png =
      request.output.empty() ? absl::StrCat(dir, "/step_times.png") : request.output;
  absl::Status written = WriteText(data, HeatMapData(map));
  if (written.ok()) {
    written =
        WriteText(script, HeatMapScript(map, data, png, absl::StrCat("own work per step, ", *csv)));
  }
  if (!written.ok()) {
    err << "accel-launch report: " << written.message() << "\n";
    return kExitWorkerFailed;
  }
  if (absl::Status plotted = Plot(script, request.path_env); !plotted.ok()) {
    err << "accel-launch report: " << plotted.message() << " (the data and script are in " << dir
        << ")\n";
    return kExitWorkerFailed;
  }
  out << "wrote " << png << " (" << map.ranks.size() << " ranks x " << map.cells[0].size()
      << " intervals of " << absl::StrFormat("%.1f", map.bin_s) << " s)\n";
  out << "most own work per step: rank " << HottestRank(map) << "\n";
  return kExitOk;
}

}  // namespace accel::launcher
