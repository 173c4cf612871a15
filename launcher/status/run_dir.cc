#include "launcher/status/run_dir.h"

#include <glob.h>
#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "common/safe_file.h"

namespace accel::launcher {
namespace {

std::string Env(const EnvLookup& env, const char* name) {
  std::optional<std::string> value = env ? env(name) : std::nullopt;
  return value.value_or("");
}

// XDG_RUNTIME_DIR when it is an absolute directory of this user's that nobody else may enter.
std::string RuntimeDir(const EnvLookup& env) {
  const std::string dir = Env(env, "XDG_RUNTIME_DIR");
  if (dir.empty() || dir.front() != '/') return "";
  absl::StatusOr<UniqueFd> fd = OpenOwnDir(dir);
  struct stat st {};
  if (!fd.ok() || ::fstat(fd->get(), &st) != 0 || (st.st_mode & 077) != 0) return "";
  return dir;
}

std::string TempDir(const EnvLookup& env) {
  const std::string tmp = Env(env, "TMPDIR");
  return tmp.empty() ? "/tmp" : tmp;
}

std::vector<std::string> Glob(const std::string& pattern) {
  glob_t found{};
  std::vector<std::string> out;
  if (::glob(pattern.c_str(), GLOB_ONLYDIR, nullptr, &found) == 0) {
    for (std::size_t i = 0; i < found.gl_pathc; ++i) out.emplace_back(found.gl_pathv[i]);
  }
  ::globfree(&found);
  return out;
}

}  // namespace

mode_t RunDirMode(const std::string& log_mode) { return log_mode == "group" ? 0750 : 0700; }
mode_t LogFileMode(const std::string& log_mode) { return log_mode == "group" ? 0640 : 0600; }

absl::StatusOr<RunDir> CreateRunDir(const RunDirPlace& place, const EnvLookup& env) {
  RunDir out;
  if (!place.log_dir.empty()) {
    const mode_t mode = RunDirMode(place.log_mode);
    if (absl::Status s = MakeParentDirs(place.log_dir, mode); !s.ok()) return s;
    out.path = absl::StrCat(place.log_dir, "/", place.run_id);
    absl::StatusOr<UniqueFd> fd = MakeOwnDir(out.path, mode);
    if (!fd.ok()) return fd.status();
    out.fd = *std::move(fd);
    return out;
  }
  out.scratch = true;
  const std::string name = absl::StrCat("accel-", place.run_id, "-m", place.machine_rank);
  if (const std::string runtime = RuntimeDir(env); !runtime.empty()) {
    out.path = absl::StrCat(runtime, "/", name);
    absl::StatusOr<UniqueFd> fd = MakeOwnDir(out.path, 0700);
    if (!fd.ok()) return fd.status();
    out.fd = *std::move(fd);
    return out;
  }
  absl::StatusOr<std::string> fresh = MakeFreshDir(absl::StrCat(TempDir(env), "/", name, "-"));
  if (!fresh.ok()) return fresh.status();
  out.path = *std::move(fresh);
  absl::StatusOr<UniqueFd> fd = OpenOwnDir(out.path);
  if (!fd.ok()) return fd.status();
  out.fd = *std::move(fd);
  return out;
}

std::vector<std::string> ScratchRoots(const EnvLookup& env) {
  std::vector<std::string> roots;
  if (std::string runtime = RuntimeDir(env); !runtime.empty()) roots.push_back(runtime);
  roots.push_back(TempDir(env));
  return roots;
}

std::vector<std::string> RunDirCandidates(const std::string& log_dir, const std::string& run_id,
                                          const EnvLookup& env) {
  if (!log_dir.empty()) return Glob(absl::StrCat(log_dir, "/", run_id));
  std::vector<std::string> out;
  for (const std::string& root : ScratchRoots(env)) {
    for (std::string& dir : Glob(absl::StrCat(root, "/accel-", run_id, "-m*"))) {
      out.push_back(std::move(dir));
    }
  }
  return out;
}

}  // namespace accel::launcher
