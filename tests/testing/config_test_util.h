// Helpers for the config unit tests: a temporary directory and file writing.
#ifndef ACCEL_TESTS_TESTING_CONFIG_TEST_UTIL_H_
#define ACCEL_TESTS_TESTING_CONFIG_TEST_UTIL_H_

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/testing/files.h"

namespace accel::launcher::testing {

// A fresh directory under $TMPDIR, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/accel_config_XXXXXX";
    path_ = mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
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

using accel::testing::ReadFile;

}  // namespace accel::launcher::testing

#endif  // ACCEL_TESTS_TESTING_CONFIG_TEST_UTIL_H_
