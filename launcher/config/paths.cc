#include "launcher/config/paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace accel::launcher {
namespace {

absl::Status Cannot(const std::string& what, const std::string& path, int err) {
  return absl::FailedPreconditionError(absl::StrCat(what, " ", path, ": ", std::strerror(err)));
}

// Returns `path` without its last component ("a/b" → "a", "/a" → "/", "a" → ".").
std::string Parent(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

absl::Status CheckDirectoryCreatable(const std::string& dir) {
  std::string path = dir;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  // Walk up to the deepest part that exists.
  std::vector<std::string> missing;
  struct stat st {};
  while (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR) return Cannot("cannot reach", path, errno);
    missing.push_back(path);
    const std::string parent = Parent(path);
    if (parent == path) break;
    path = parent;
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a directory"));
  }
  if (missing.empty()) {
    if (::access(path.c_str(), W_OK | X_OK) != 0) return Cannot("cannot write in", path, errno);
    return absl::OkStatus();
  }
  // Create the missing levels, outermost first, then remove what this created, innermost first.
  absl::Status status;
  std::vector<std::string> created;
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) == 0) {  // a probe, removed below
      created.push_back(*it);
    } else if (errno != EEXIST) {
      status = Cannot("cannot create", *it, errno);
      break;
    }
  }
  for (auto it = created.rbegin(); it != created.rend(); ++it) ::rmdir(it->c_str());
  return status;
}

}  // namespace accel::launcher
