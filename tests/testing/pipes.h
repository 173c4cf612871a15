// Test helper for pipes: what a pipe holds now, read without waiting.
#ifndef ACCEL_TESTS_TESTING_PIPES_H_
#define ACCEL_TESTS_TESTING_PIPES_H_

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <string>

namespace accel::testing {

// Everything readable from `fd` now (it is made non-blocking): "" when nothing is.
inline std::string Drain(int fd) {
  std::string out;
  char buf[4096];
  ::fcntl(fd, F_SETFL, O_NONBLOCK);
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

}  // namespace accel::testing

#endif  // ACCEL_TESTS_TESTING_PIPES_H_
