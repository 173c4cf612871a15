// main() of the gpu test binaries: the exit code says what happened, so CTest never has to guess
// from the output. 0: every selected test passed; 1: any failed, or none was selected; 77 (CTest's
// SKIP_RETURN_CODE for the gpu label): none failed and at least one skipped. A binary that printed
// one skip and one failure exits 1. (CTest's SKIP_REGULAR_EXPRESSION would report such a run as
// skipped.)
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  if (rc != 0 || unit.failed_test_count() > 0 || !unit.Passed()) return 1;
  if (unit.test_to_run_count() == 0) {
    std::fprintf(stderr, "no test matched the filter: nothing was checked\n");
    return 1;
  }
  if (unit.skipped_test_count() > 0) return 77;
  return 0;
}
