// Printable: what may reach a terminal from outside text.
#include "common/printable.h"

#include "gtest/gtest.h"

namespace accel {
namespace {

TEST(PrintableTest, PlainTextTabsAndUtf8PassUnchanged) {
  EXPECT_EQ(Printable("num_processes: 2\t# two"), "num_processes: 2\t# two");
  EXPECT_EQ(Printable("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}

TEST(PrintableTest, ControlBytesAndBrokenUtf8AreEscaped) {
  const char raw[] = "a\x1b[31m\r\n\0\x7f";
  EXPECT_EQ(Printable(std::string(raw, sizeof(raw) - 1)), "a\\x1b[31m\\x0d\\x0a\\x00\\x7f");
  EXPECT_EQ(Printable("\xff\xfe"), "\\xff\\xfe");  // not UTF-8
  EXPECT_EQ(Printable("\xc2\x9b"
                      "2J"),
            "\\xc2\\x9b2J");                                // U+009B, the C1 CSI
  EXPECT_EQ(Printable("\xe2\x82"), "\\xe2\\x82");           // truncated sequence
  EXPECT_EQ(Printable("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(Printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
}

}  // namespace
}  // namespace accel
