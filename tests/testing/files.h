// Test helpers for files: whole-file reads and a temporary directory. Standard library only.
#ifndef ACCEL_TESTS_TESTING_FILES_H_
#define ACCEL_TESTS_TESTING_FILES_H_

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace accel::testing {

// Returns the contents of `path`; "" when it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The lines of `path`, without their newlines; none when it cannot be read.
inline std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(ReadFile(path));
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Makes a fresh directory $TMPDIR/<prefix>_XXXXXX (TMPDIR unset: /tmp) and returns its path; ""
// when it cannot. The caller removes it (tests keep it when they fail, to be read).
inline std::string MakeTempDir(const std::string& prefix) {
  const char* base = getenv("TMPDIR");
  std::string pattern =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/" + prefix + "_XXXXXX";
  return mkdtemp(pattern.data()) != nullptr ? pattern : "";
}

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() : path_(MakeTempDir("accel_test")) {}
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

  // Writes `text` to path()/relative, creating directories; returns the full path.
  std::string Write(const std::string& relative, const std::string& text) const {
    const std::filesystem::path full = std::filesystem::path(path_) / relative;
    std::filesystem::create_directories(full.parent_path());
    std::ofstream(full) << text;
    return full.string();
  }

 private:
  std::string path_;
};

}  // namespace accel::testing

#endif  // ACCEL_TESTS_TESTING_FILES_H_
