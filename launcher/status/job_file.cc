#include "launcher/status/job_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/unique_fd.h"

namespace accel::launcher {
namespace {

// Writes `text` to `path` with `mode` through a temporary file renamed into place.
absl::Status WriteAtomically(const std::string& path, const std::string& text, mode_t mode) {
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
    if (!fd.valid()) return absl::ErrnoToStatus(errno, absl::StrCat("write ", path));
    if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      const int err = errno;
      ::unlink(tmp.c_str());
      return absl::ErrnoToStatus(err, absl::StrCat("write ", path));
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return absl::ErrnoToStatus(err, absl::StrCat("write ", path));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteJobFile(const std::string& run_dir, const JobFile& job) {
  const std::string text =
      absl::StrCat("run_id=", job.run_id, "\nstore_endpoint=", job.store_endpoint,
                   "\nmachine_rank=", job.machine_rank, "\nnum_machines=", job.num_machines,
                   "\ntoken_file=", job.token_file, "\ntls_ca_file=", job.tls_ca_file,
                   "\nlauncher_pid=", job.launcher_pid, "\n");
  return WriteAtomically(absl::StrCat(run_dir, "/", kJobFileName), text, 0644);
}

absl::StatusOr<JobFile> ReadJobFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return errno == ENOENT ? absl::NotFoundError(absl::StrCat("no job file ", path))
                           : absl::ErrnoToStatus(errno, absl::StrCat("read job file ", path));
  }
  std::ostringstream text;
  text << in.rdbuf();
  JobFile job;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text.str(), '\n', absl::SkipEmpty())) {
    ++number;
    const std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, '=');
    const std::string value(absl::StripAsciiWhitespace(kv.second));
    bool ok = line.find('=') != absl::string_view::npos;
    if (kv.first == "run_id") job.run_id = value;
    if (kv.first == "store_endpoint") job.store_endpoint = value;
    if (kv.first == "token_file") job.token_file = value;
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

absl::StatusOr<std::string> WriteJobToken(const std::string& run_dir, const std::string& token) {
  const std::string path = absl::StrCat(run_dir, "/", kJobTokenFileName);
  if (absl::Status s = WriteAtomically(path, token + "\n", 0600); !s.ok()) return s;
  return path;
}

}  // namespace accel::launcher
