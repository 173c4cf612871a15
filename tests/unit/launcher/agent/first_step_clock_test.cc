// Unit tests of FirstStepClock (the time from learning of an in-place membership change to the
// first step at the new world) with real progress files: the baseline is the newest step any
// local rank had recorded when it was added, a lagging rank catching up to it is not a step, one
// beyond it is said once with the time since `learned`, and nothing is said when the clock
// stops first.
#include "launcher/agent/first_step_clock.h"

#include <fstream>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/files.h"

namespace accel::launcher {
namespace {

// Writes a progress file of one word, the step (an 8-byte record: common/progress_record.h).
void WriteStep(const std::string& path, std::uint64_t step) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    bytes[static_cast<std::size_t>(i)] = static_cast<char>(step >> (8 * i));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

class Lines {
 public:
  std::function<void(const std::string&)> Sink() {
    return [this](const std::string& line) {
      absl::MutexLock lock(&mu_);
      lines_.push_back(line);
    };
  }
  std::vector<std::string> Await(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto some = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !lines_.empty(); };
    mu_.AwaitWithTimeout(absl::Condition(&some), timeout);
    return lines_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

TEST(FirstStepClockTest, SaysTheFirstStepBeyondTheNewestRecordedOnce) {
  const accel::testing::TempDir dir;
  const std::string a = dir.path() + "/a", b = dir.path() + "/b";
  WriteStep(a, 12);
  WriteStep(b, 11);  // a rank one step behind when the change came
  Lines lines;
  {
    FirstStepClock clock(3, 4, absl::Now() - absl::Seconds(2), lines.Sink());
    clock.Add(a);
    clock.Add(b);
    clock.Add("");     // a worker without a progress file: ignored
    WriteStep(b, 12);  // recover() brings it to the agreed step: not a step at world 4
    EXPECT_TRUE(lines.Await(absl::Milliseconds(100)).empty());
    WriteStep(b, 13);
    const std::vector<std::string> said = lines.Await(absl::Seconds(5));
    ASSERT_EQ(said.size(), 1u);
    EXPECT_THAT(said[0], ::testing::StartsWith("membership: generation 3: first step at world 4 "
                                               "done 2."));
    EXPECT_THAT(said[0], ::testing::EndsWith(" s after this machine learned of the change"));
    WriteStep(a, 14);
    absl::SleepFor(absl::Milliseconds(30));
  }
  EXPECT_EQ(lines.Await(absl::ZeroDuration()).size(), 1u);  // once
}

TEST(FirstStepClockTest, SaysNothingWhenStoppedBeforeAStep) {
  const accel::testing::TempDir dir;
  const std::string a = dir.path() + "/a";
  WriteStep(a, 7);
  Lines lines;
  {
    FirstStepClock clock(1, 2, absl::Now(), lines.Sink());
    clock.Add(a);
    absl::SleepFor(absl::Milliseconds(20));
  }
  WriteStep(a, 8);
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_TRUE(lines.Await(absl::ZeroDuration()).empty());
}

}  // namespace
}  // namespace accel::launcher
