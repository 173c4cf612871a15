// `accel-launch report LOG_DIR [--output PNG]`: the heat map of a run's step times (ranks × time,
// launcher/status/step_times.h), drawn with gnuplot, in which a straggler is the bright row.
//
// LOG_DIR is a run directory (holding step_times.csv) or a log directory (the newest run in it).
// Writes step_times.dat and step_times.gp beside the CSV and the PNG (default
// step_times.png beside the CSV), then prints the PNG's path and the rank whose own work per
// step was the highest. Exit codes: 0; 2 for a missing or unreadable CSV; 1 when gnuplot is
// missing or fails (common/exit_codes.h).
#ifndef ACCEL_LAUNCHER_COMMANDS_REPORT_COMMAND_H_
#define ACCEL_LAUNCHER_COMMANDS_REPORT_COMMAND_H_

#include <ostream>
#include <string>

#include "absl/status/statusor.h"

namespace accel::launcher {

struct ReportRequest {
  std::string log_dir;
  std::string output;    // "" = step_times.png beside the CSV
  std::string path_env;  // PATH, to find gnuplot
};

// Returns LOG_DIR/step_times.csv when it exists, else the newest LOG_DIR/*/step_times.csv.
absl::StatusOr<std::string> FindStepTimes(const std::string& log_dir);

// Runs the command; returns its exit code.
int RunReportCommand(const ReportRequest& request, std::ostream& out, std::ostream& err);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_COMMANDS_REPORT_COMMAND_H_
