// The example trainer's progress line.
#include "examples/progress_view.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "examples/idx_reader.h"
#include "examples/train_flags.h"

namespace accel::examples {
namespace {

TEST(ProgressView, FormatsBarStepsLossRateEtaAndScale) {
  ProgressSample sample{50, 200, 0.51234, 1234.4, 65536};
  EXPECT_EQ(ProgressView::Format(sample, 75, 10),
            "[###.......] step 50/200  loss 0.5123  1234 samples/s  ETA 01:15  scale 65536");
  sample.loss_scale = 0;
  EXPECT_EQ(ProgressView::Format(sample, -1, 0),
            "step 50/200  loss 0.5123  1234 samples/s  ETA --:--");
}

TEST(ProgressView, PlainModePrintsWholeLines) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  ProgressView view(out, /*is_terminal=*/false, /*plain_every_s=*/3600);
  view.Update({1, 4, 2.0, 10, 0});
  view.Update({2, 4, 1.5, 10, 0});  // rate-limited away
  view.Finish({4, 4, 1.0, 10, 0});
  std::rewind(out);
  char buffer[512] = {};
  size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, out);
  std::fclose(out);
  std::string text(buffer, n);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_NE(text.find("step 1/4"), std::string::npos);
  EXPECT_EQ(text.find("step 2/4"), std::string::npos);
  EXPECT_NE(text.find("step 4/4  loss 1.0000"), std::string::npos);
}

}  // namespace
}  // namespace accel::examples
