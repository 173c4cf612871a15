#include "launcher/agent/python_progress.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/safe_file.h"
#include "common/unique_fd.h"
#include "launcher/agent/python_progress_files.h"
#include "launcher/process/output.h"

namespace accel::launcher {

bool IsPythonInterpreter(absl::string_view program) {
  const size_t slash = program.rfind('/');
  absl::string_view name = slash == absl::string_view::npos ? program : program.substr(slash + 1);
  if (!absl::ConsumePrefix(&name, "python")) return false;
  for (char c : name) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  }
  return true;
}

absl::Status WritePythonProgressModule(const std::string& dir) {
  // In the private run directory (common/safe_file.h): a planted link or file is refused.
  if (absl::Status parents = MakeParentDirs(dir, 0700); !parents.ok()) return parents;
  absl::StatusOr<UniqueFd> made = MakeOwnDir(dir, 0700);
  if (!made.ok()) return made.status();
  for (const PythonProgressFile& file : kPythonProgressFiles) {
    const std::string path = absl::StrCat(dir, "/", file.name);
    if (absl::Status written = WriteFileAt(made->get(), file.name, file.text, 0600, path);
        !written.ok()) {
      return absl::Status(written.code(),
                          absl::StrCat("write the Python progress module: ", written.message()));
    }
  }
  return absl::OkStatus();
}

std::string PythonPathWithModule(const std::string& module_dir, const char* inherited) {
  return inherited == nullptr ? module_dir : absl::StrCat(module_dir, ":", inherited);
}

}  // namespace accel::launcher
