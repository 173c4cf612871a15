// The one rule for reading environment variables (common/env_reader.h).
#include "common/env_reader.h"

#include <stdlib.h>

#include "gtest/gtest.h"

namespace accel::env {
namespace {

constexpr char kName[] = "ACCEL_ENV_READER_TEST";

class EnvReaderTest : public ::testing::Test {
 protected:
  void TearDown() override { ::unsetenv(kName); }
  void Set(const char* value) { ::setenv(kName, value, 1); }
};

TEST_F(EnvReaderTest, UnsetAndEmptyAreAbsent) {
  ::unsetenv(kName);
  EXPECT_EQ(Get(kName), nullptr);
  EXPECT_EQ(GetInt(kName, 7), 7);
  EXPECT_EQ(GetBool(kName, true), true);
  Set("");
  EXPECT_EQ(Get(kName), nullptr);
  EXPECT_EQ(GetInt(kName, 7), 7);
  EXPECT_EQ(GetBool(kName, false), false);
  Set("x");
  EXPECT_STREQ(Get(kName), "x");
}

TEST_F(EnvReaderTest, IntegersAreWholeDecimalNumbersInRange) {
  EXPECT_EQ(ParseInt("0"), 0);
  EXPECT_EQ(ParseInt("-1"), -1);
  EXPECT_EQ(ParseInt("+12"), 12);
  EXPECT_EQ(ParseInt("1073741824"), 1 << 30);
  EXPECT_EQ(ParseInt("1073741825"), std::nullopt);
  EXPECT_EQ(ParseInt("-2"), std::nullopt);
  EXPECT_EQ(ParseInt("99999999999999999999"), std::nullopt);
  EXPECT_EQ(ParseInt("two"), std::nullopt);
  EXPECT_EQ(ParseInt("3x"), std::nullopt);
  EXPECT_EQ(ParseInt("3 "), std::nullopt);
  EXPECT_EQ(ParseInt(""), std::nullopt);
  Set("4");
  EXPECT_EQ(GetInt(kName, 0), 4);
  Set("four");
  EXPECT_EQ(GetInt(kName, 0), std::nullopt);
}

TEST_F(EnvReaderTest, BooleansAreOneTrueYesOrZeroFalseNoInAnyCase) {
  for (const char* yes : {"1", "true", "TRUE", "Yes"}) EXPECT_EQ(ParseBool(yes), true) << yes;
  for (const char* no : {"0", "false", "False", "NO"}) EXPECT_EQ(ParseBool(no), false) << no;
  for (const char* bad : {"on", "off", "2", "truthy", ""}) {
    EXPECT_EQ(ParseBool(bad), std::nullopt) << bad;
  }
  Set("maybe");
  EXPECT_EQ(GetBool(kName, true), std::nullopt);
}

}  // namespace
}  // namespace accel::env
