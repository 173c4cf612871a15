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

TEST(DiagnosticsTest, ALongLineOrMessageIsCutAroundTheColumn) {
  // A 1 MB one-line file shows a window of its line around the column, and the caret under it.
  std::string line(1000000, 'x');
  line[500000] = '!';
  Diagnostic d{"f", 1, 500001, line, "bad key '" + line + "'"};
  const std::string out = FormatDiagnostic(d);
  EXPECT_LT(out.size(), 1500u) << out.size();
  EXPECT_NE(out.find("... (998986 more bytes)"), std::string::npos) << out;  // 1 MB + 10 - 1024
  const std::size_t newline = out.find('\n');
  const std::size_t second = out.find('\n', newline + 1);
  ASSERT_NE(second, std::string::npos);
  const std::string shown = out.substr(newline + 1, second - newline - 1);
  const std::string caret = out.substr(second + 1);
  EXPECT_EQ(shown.substr(0, 3), "...");
  EXPECT_EQ(shown.substr(shown.size() - 3), "...");
  ASSERT_EQ(caret.back(), '^');
  EXPECT_EQ(shown[caret.size() - 1], '!') << shown << "\n" << caret;
  // Short lines are shown whole, as before.
  EXPECT_EQ(FormatDiagnostic({"f", 1, 2, "ab", "bad"}), "f:1:2: bad\nab\n ^");
}

TEST(DiagnosticsTest, EditDistance) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(ClosestMatch("mixed-precison", {"mixed_precision", "num_machines"}), "mixed_precision");
  EXPECT_EQ(ClosestMatch("zzz", {"mixed_precision", "num_machines"}), "");
}

}  // namespace
}  // namespace accel::launcher
