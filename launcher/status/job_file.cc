#include "launcher/status/job_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/safe_file.h"

namespace accel::launcher {
namespace {

constexpr std::size_t kMaxJobFileBytes = 64 * 1024;

absl::StatusOr<std::string> ReadFromRunDir(const std::string& run_dir, const char* name,
                                           bool private_mode) {
  absl::StatusOr<UniqueFd> dir = OpenOwnDir(run_dir);
  if (!dir.ok()) {
    return absl::IsPermissionDenied(dir.status())
               ? absl::PermissionDeniedError(absl::StrCat("run directory ", dir.status().message()))
               : dir.status();
  }
  return ReadOwnFileAt(dir->get(), name, private_mode, kMaxJobFileBytes,
                       absl::StrCat(run_dir, "/", name));
}

}  // namespace

absl::Status WriteJobFile(int dirfd, const std::string& run_dir, const JobFile& job) {
  const std::string text =
      absl::StrCat("run_id=", job.run_id, "\nstore_endpoint=", job.store_endpoint,
                   "\nmachine_rank=", job.machine_rank, "\nnum_machines=", job.num_machines,
                   "\ntls_ca_file=", job.tls_ca_file, "\nlauncher_pid=", job.launcher_pid, "\n");
  return WriteFileAt(dirfd, kJobFileName, text, 0600, absl::StrCat(run_dir, "/", kJobFileName));
}

absl::StatusOr<JobFile> ReadJobFile(const std::string& run_dir) {
  const std::string path = absl::StrCat(run_dir, "/", kJobFileName);
  absl::StatusOr<std::string> text = ReadFromRunDir(run_dir, kJobFileName, false);
  if (!text.ok()) {
    return absl::IsNotFound(text.status()) ? absl::NotFoundError(absl::StrCat("no job file ", path))
                                           : text.status();
  }
  JobFile job;
  job.run_dir = run_dir;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    ++number;
    const std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, '=');
    const std::string value(absl::StripAsciiWhitespace(kv.second));
    bool ok = line.find('=') != absl::string_view::npos;
    if (kv.first == "run_id") job.run_id = value;
    if (kv.first == "store_endpoint") job.store_endpoint = value;
    if (kv.first == "tls_ca_file") job.tls_ca_file = value;
    if (kv.first == "machine_rank") ok = ok && absl::SimpleAtoi(value, &job.machine_rank);
    if (kv.first == "num_machines") ok = ok && absl::SimpleAtoi(value, &job.num_machines);
    if (kv.first == "launcher_pid") ok = ok && absl::SimpleAtoi(value, &job.launcher_pid);
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("job file ", path, ":", number, ": cannot read '", line, "'"));
    }
  }
  if (job.run_id.empty() || job.store_endpoint.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("job file ", path, ": run_id or store_endpoint missing"));
  }
  return job;
}

absl::Status WriteJobToken(int dirfd, const std::string& run_dir, const std::string& token) {
  return WriteFileAt(dirfd, kJobTokenFileName, token + "\n", 0600,
                     absl::StrCat(run_dir, "/", kJobTokenFileName));
}

absl::StatusOr<std::string> ReadJobToken(const std::string& run_dir) {
  absl::StatusOr<std::string> text = ReadFromRunDir(run_dir, kJobTokenFileName, true);
  if (!text.ok()) return text.status();
  std::string line = text->substr(0, text->find('\n'));
  absl::StripAsciiWhitespace(&line);
  return line;
}

bool OwnLauncherRunning(int pid) {
  if (pid <= 0) return false;
  struct stat st {};
  return ::stat(absl::StrCat("/proc/", pid).c_str(), &st) == 0 && st.st_uid == ::geteuid();
}

}  // namespace accel::launcher
