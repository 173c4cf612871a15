// The launcher's notices: exact bytes on stderr (fd 2), whatever the message holds.
#include "common/logging.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "gtest/gtest.h"

namespace accel {
namespace {

// Runs `write` with fd 2 sent to a temporary file; returns what reached it.
template <typename Fn>
std::string CaptureStderr(Fn write) {
  std::FILE* file = std::tmpfile();
  if (file == nullptr) return "<tmpfile failed>";
  std::fflush(stderr);
  const int saved = ::dup(2);
  ::dup2(::fileno(file), 2);
  write();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::string out;
  std::rewind(file);
  char buf[256];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof(buf), file)) > 0;) out.append(buf, n);
  std::fclose(file);
  return out;
}

TEST(LoggingTest, NoticeIsThePrefixTheMessageAndOneNewline) {
  EXPECT_EQ(CaptureStderr([] { Notice("launch: 50% done {} %s"); }),
            "[accel-launch] launch: 50% done {} %s\n");
  EXPECT_EQ(CaptureStderr([] { Notice(""); }), "[accel-launch] \n");
}

TEST(LoggingTest, NoticeBlockWritesTheTextAsIs) {
  EXPECT_EQ(CaptureStderr([] { NoticeBlock("plan: run x\n  machines: 1 {}\n"); }),
            "plan: run x\n  machines: 1 {}\n");
  EXPECT_EQ(CaptureStderr([] {
              Notice("first");
              NoticeBlock("second, no newline");
              Notice("third");
            }),
            "[accel-launch] first\nsecond, no newline[accel-launch] third\n");
}

TEST(LoggingTest, NoticesShowWhateverTheLogLevel) {
  // InitLogging inside the capture: its sink decides on colours from what fd 2 is then.
  EXPECT_EQ(CaptureStderr([] {
              InitLogging(/*verbose=*/false);
              spdlog::warn("careful {}", 1);
              spdlog::set_level(spdlog::level::off);
              Notice("still here");
              spdlog::set_level(spdlog::level::info);
            }),
            "[accel-launch] warning: careful 1\n[accel-launch] still here\n");
}

}  // namespace
}  // namespace accel
