// Unit tests of program resolution (ResolveProgram) through PATH.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/process/os_util.h"
#include "launcher/process/supervisor.h"

namespace accel::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ResolveProgramTest, FindsThroughPathAndExplainsWhatIsMissing) {
  auto sh = ResolveProgram("sh", "/nonexistent:/bin:/usr/bin");
  ASSERT_TRUE(sh.ok()) << sh.status();
  EXPECT_EQ(*sh, "/bin/sh");
  auto missing = ResolveProgram("./no_such_train.bin", "/bin");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(std::string(missing.status().message()),
            "resolve program ./no_such_train.bin: No such file or directory");
  auto not_on_path = ResolveProgram("no_such_program_xyz", "/bin:/usr/bin");
  EXPECT_EQ(not_on_path.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(not_on_path.status().message(), HasSubstr("no_such_program_xyz"));
  auto dir = ResolveProgram("/tmp", "");
  EXPECT_FALSE(dir.ok());
  EXPECT_THAT(dir.status().message(), HasSubstr("Is a directory"));
}

}  // namespace
}  // namespace accel::launcher
