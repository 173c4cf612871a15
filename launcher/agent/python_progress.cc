#include "launcher/agent/python_progress.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
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
  if (absl::Status made = MakeDirs(dir); !made.ok()) return made;
  for (const PythonProgressFile& file : kPythonProgressFiles) {
    const std::string path = absl::StrCat(dir, "/", file.name);
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
    const size_t size = std::strlen(file.text);
    if (!fd.valid() || ::write(fd.get(), file.text, size) != static_cast<ssize_t>(size)) {
      return absl::ErrnoToStatus(errno, absl::StrCat("write the Python progress module ", path));
    }
  }
  return absl::OkStatus();
}

std::string PythonPathWithModule(const std::string& module_dir, const char* inherited) {
  return inherited == nullptr ? module_dir : absl::StrCat(module_dir, ":", inherited);
}

}  // namespace accel::launcher
