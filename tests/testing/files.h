// Test helper: whole-file reads. Standard library only.
#ifndef ACCEL_TESTS_TESTING_FILES_H_
#define ACCEL_TESTS_TESTING_FILES_H_

#include <fstream>
#include <sstream>
#include <string>

namespace accel::testing {

// Returns the contents of `path`; "" when it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace accel::testing

#endif  // ACCEL_TESTS_TESTING_FILES_H_
