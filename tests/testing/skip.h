// How a test that cannot run here says so: one rule for every test of the suite (C++ here, shell
// in tests/testing/skip.sh, Python in tests/testing/skip.py).
//
// A test that lacks something CI provides (root, `ip netns`, a Debian package scripts/install-deps
// installs) skips with the reason: exit 77, which CTest reports as skipped (SKIP_RETURN_CODE),
// never as passed. Under CI (CI=true, as CI services set it) or ACCEL_STRICT_TESTS=1 the same
// reason fails the test instead, so CI cannot go green with coverage gone. ACCEL_STRICT_TESTS=0
// turns that off even under CI. Hardware a machine may lack (a GPU, a second CPU) is not
// something CI provides: those skips stay skips (the gpu label's rule is ACCEL_REQUIRE_GPU,
// tests/testing/gpu_test_util.h).
//
// A gtest binary's exit code is set by tests/testing/test_main.cc: 0 every selected case passed,
// 1 any failed, 77 none failed and at least one skipped (also when others passed: the binary did
// not check everything it holds, so it is not reported as passed).
#ifndef ACCEL_TESTS_TESTING_SKIP_H_
#define ACCEL_TESTS_TESTING_SKIP_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace accel::testing {

// The switch that makes environment skips failures (also when CI is unset), or turns that off.
inline constexpr char kStrictTestsEnv[] = "ACCEL_STRICT_TESTS";

// Returns true when the environment variable `name` holds a true value ("1", "true", "yes").
inline bool EnvTrue(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  std::string s(v);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s == "1" || s == "true" || s == "yes";
}

// Returns true when a skip for want of something CI provides is a failure: ACCEL_STRICT_TESTS
// when it is set (to anything), otherwise CI.
inline bool StrictTests() {
  const char* strict = std::getenv(kStrictTestsEnv);
  if (strict != nullptr && *strict != '\0') return EnvTrue(kStrictTestsEnv);
  return EnvTrue("CI");
}

// Returns why a skip is a failure here ("CI=true", "ACCEL_STRICT_TESTS=1").
inline std::string StrictReason() {
  const char* strict = std::getenv(kStrictTestsEnv);
  if (strict != nullptr && *strict != '\0') return std::string(kStrictTestsEnv) + "=" + strict;
  return std::string("CI=") + std::getenv("CI");
}

}  // namespace accel::testing

// Skips the current test with `why` (streamed, as for GTEST_SKIP) because the environment lacks
// something CI provides; under CI or ACCEL_STRICT_TESTS=1 fails it with the same reason instead.
// Returns from the current function (SetUp included: the test body then does not run).
#define ACCEL_SKIP_OR_FAIL(why)                                                        \
  do {                                                                                 \
    if (::accel::testing::StrictTests()) {                                             \
      GTEST_FAIL() << "a skip is a failure here (" << ::accel::testing::StrictReason() \
                   << "; ACCEL_STRICT_TESTS=0 allows it): " << why;                    \
    }                                                                                  \
    GTEST_SKIP() << why;                                                               \
  } while (0)

#endif  // ACCEL_TESTS_TESTING_SKIP_H_
