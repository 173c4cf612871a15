#include "common/random.h"

#include "gtest/gtest.h"

namespace accel {
namespace {

TEST(RandomHexTest, IsLowercaseHexOfTwiceTheLengthAndFresh) {
  absl::StatusOr<std::string> a = RandomHex(6);
  absl::StatusOr<std::string> b = RandomHex(6);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->size(), 12u);
  EXPECT_EQ(a->find_first_not_of("0123456789abcdef"), std::string::npos) << *a;
  EXPECT_NE(*a, *b);  // 48 random bits: a collision here is a broken generator
  EXPECT_EQ(RandomHex(0).value_or("?"), "");
  EXPECT_EQ(RandomHex(300).value_or("").size(), 600u);  // more than getrandom's 256-byte step
}

}  // namespace
}  // namespace accel
