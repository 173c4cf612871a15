#include "common/seconds.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace accel {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(SecondsTest, ToSecondsPrintsAsConfigFilesSpellIt) {
  static_assert(ToSeconds(seconds(900)) == 900.0);
  EXPECT_EQ(absl::StrCat(ToSeconds(milliseconds(100))), "0.1");
  EXPECT_EQ(absl::StrCat(ToSeconds(seconds(30))), "30");
}

TEST(SecondsTest, FromSecondsTruncatesToWholeMilliseconds) {
  static_assert(FromSeconds(30) == seconds(30));
  EXPECT_EQ(FromSeconds(0.1), milliseconds(100));
  EXPECT_EQ(FromSeconds(1.5), milliseconds(1500));
  EXPECT_EQ(FromSeconds(0.0019), milliseconds(1));
  EXPECT_EQ(FromSeconds(0), milliseconds(0));
  EXPECT_EQ(FromSeconds(ToSeconds(milliseconds(100))), milliseconds(100));
}

}  // namespace
}  // namespace accel
