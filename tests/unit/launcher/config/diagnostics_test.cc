// Diagnostics: carets under tabs and the edit distance behind "did you mean".
#include <cstdlib>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "launcher/config/loader.h"
#include "launcher/config/validate.h"

namespace accel::launcher {
namespace {

TEST(DiagnosticsTest, CaretKeepsTabs) {
  Diagnostic d{"f", 1, 3, "\tx y", "bad"};
  EXPECT_EQ(FormatDiagnostic(d), "f:1:3: bad\n\tx y\n\t ^");
  EXPECT_EQ(FormatDiagnostic({"ACCEL_NUM_MACHINES=0", 0, 0, "", "bad"}),
            "ACCEL_NUM_MACHINES=0: bad");
}

TEST(DiagnosticsTest, NonPrintableBytesAreEscapedAndTheCaretFollows) {
  // A binary file's bytes (an escape sequence, a NUL, a bare 0xff) never reach the terminal.
  const char line[] = "\x1b[2J\0x\xff: 1";
  Diagnostic d{"f", 1, 5, std::string(line, sizeof(line) - 1), "unknown key '\x1b[2J'"};
  EXPECT_EQ(FormatDiagnostic(d),
            "f:1:5: unknown key '\\x1b[2J'\n"
            "\\x1b[2J\\x00x\\xff: 1\n"
            "       ^");
  // UTF-8 passes; the caret counts its characters, not its bytes.
  EXPECT_EQ(FormatDiagnostic({"f", 1, 5, "é: x", "bad"}), "f:1:5: bad\né: x\n   ^");
}

TEST(DiagnosticsTest, EditDistance) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(ClosestMatch("mixed-precison", {"mixed_precision", "num_machines"}), "mixed_precision");
  EXPECT_EQ(ClosestMatch("zzz", {"mixed_precision", "num_machines"}), "");
}

}  // namespace
}  // namespace accel::launcher
