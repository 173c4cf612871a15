// main() of every gtest binary of the suite: the exit code says what happened, so CTest never
// has to guess from the output (tests/testing/skip.h has the skip rule).
//   0   every selected case passed;
//   1   any case failed, or no case was selected (nothing was checked);
//   77  none failed and at least one skipped (CTest's SKIP_RETURN_CODE): reported as skipped,
//       never as passed, also when other cases of the binary passed. The cases that skipped and
//       why are printed last.
// (CTest's SKIP_REGULAR_EXPRESSION would report a run with one skip and one failure as skipped;
// plain gtest_main exits 0 when every case skipped.)
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace {

// Prints every skipped case of the run and the reason it gave.
void PrintSkipped(const testing::UnitTest& unit) {
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const testing::TestSuite& suite = *unit.GetTestSuite(s);
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const testing::TestInfo& info = *suite.GetTestInfo(t);
      const testing::TestResult& result = *info.result();
      if (!info.should_run() || !result.Skipped()) continue;
      std::string why;
      for (int p = 0; p < result.total_part_count(); ++p) {
        if (result.GetTestPartResult(p).skipped()) why = result.GetTestPartResult(p).message();
      }
      std::fprintf(stderr, "  skipped %s.%s: %s\n", suite.name(), info.name(), why.c_str());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  if (rc != 0 || unit.failed_test_count() > 0 || !unit.Passed()) return 1;
  if (unit.test_to_run_count() == 0) {
    std::fprintf(stderr, "no test matched the filter: nothing was checked\n");
    return 1;
  }
  if (unit.skipped_test_count() > 0) {
    std::fprintf(stderr,
                 "%d of %d case(s) skipped, %d passed: exit 77 (skipped), not 0: a skip is never "
                 "reported as a pass\n",
                 unit.skipped_test_count(), unit.test_to_run_count(), unit.successful_test_count());
    PrintSkipped(unit);
    return 77;
  }
  return 0;
}
