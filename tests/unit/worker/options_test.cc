#include "accel/options.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "accel/error.h"

namespace accel {
namespace {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

TEST(OptionsTest, BareEnvironmentIsWorldOfOne) {
  ::unsetenv("RANK");
  ::unsetenv("WORLD_SIZE");
  Options o = Options::FromEnv();
  EXPECT_EQ(o.rank, -1);
  EXPECT_EQ(o.world_size, -1);
  EXPECT_TRUE(o.Validate().empty());
}

TEST(OptionsTest, ReadsTheEnvContract) {
  ScopedEnv rank("RANK", "3"), world("WORLD_SIZE", "4"), local("LOCAL_RANK", "1"),
      mp("ACCELERATE_MIXED_PRECISION", "FP16"),
      accum("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "8"), cpu("ACCELERATE_USE_CPU", "true"),
      backend("ACCEL_BACKEND", "gloo"), store("ACCEL_STORE_ENDPOINT", "127.0.0.1:29500"),
      progress("ACCEL_PROGRESS_FILE", "/tmp/p");
  Options o = Options::FromEnv();
  EXPECT_EQ(o.rank, 3);
  EXPECT_EQ(o.world_size, 4);
  EXPECT_EQ(o.local_rank, 1);
  EXPECT_EQ(o.mixed_precision, MixedPrecision::kFp16);
  EXPECT_EQ(o.gradient_accumulation_steps, 8);
  EXPECT_TRUE(o.cpu);
  EXPECT_EQ(o.backend, Backend::kGloo);
  EXPECT_EQ(o.store_endpoint, "127.0.0.1:29500");
  EXPECT_EQ(o.progress_file, "/tmp/p");
}

TEST(OptionsTest, BadValuesNameTheVariable) {
  ScopedEnv accum("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "two");
  try {
    Options::FromEnv();
    FAIL() << "expected accel::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "read environment ACCELERATE_GRADIENT_ACCUMULATION_STEPS: not an integer: \"two\"");
  }
  ScopedEnv mp("ACCELERATE_MIXED_PRECISION", "fp8");
  EXPECT_THROW(ParseMixedPrecision("fp8"), Error);
}

TEST(OptionsTest, ValidateReportsEveryProblem) {
  Options o;
  o.world_size = 2;
  o.rank = 5;
  o.gradient_accumulation_steps = 0;
  o.backoff_factor = 2.0;
  auto problems = o.Validate();
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0], "rank must be in [0, 2), got 5");
  EXPECT_EQ(problems[1], "gradient_accumulation_steps must be >= 1, got 0");
  EXPECT_EQ(problems[2], "backoff_factor must be in (0, 1)");
}

}  // namespace
}  // namespace accel
