// Config loading against hostile or oversized input (deep nesting, alias bombs, huge files,
// absurd counts) and where token files are found; the rest of the loader: loader_test.cc.
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "launcher/config/loader.h"
#include "launcher/config/schema.h"
#include "tests/testing/files.h"
#include "tests/unit/launcher/config/problems.h"

namespace accel::launcher {
namespace {

TEST(ConfigLoaderTest, DeepNestingIsAnErrorNotACrash) {
  const std::string out = Problems("a: " + std::string(5000, '[') + "\n");
  EXPECT_EQ(out.rfind("cfg.yaml:1:", 0), 0u) << out.substr(0, 200);
  EXPECT_NE(out.find("malformed YAML: nested too deeply"), std::string::npos);
}

// The 354-byte bomb from the issue: nine levels of nine aliases, 9^9 values once expanded.
std::string AliasBomb() {
  std::string text = "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n";
  for (char level = 'b'; level <= 'i'; ++level) {
    const char below = static_cast<char>(level - 1);
    text += std::string(1, level) + ": &" + level + " [";
    for (int i = 0; i < 9; ++i) text += std::string(i ? "," : "") + "*" + below;
    text += "]\n";
  }
  return text;
}

TEST(ConfigLoaderTest, AnAliasBombIsRefusedBeforeItExpands) {
  const std::string bomb = AliasBomb();
  ASSERT_LT(bomb.size(), 400u);
  const absl::Time start = absl::Now();
  const std::string out = Problems(bomb);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(out.rfind("cfg.yaml:", 0), 0u) << out.substr(0, 300);
  EXPECT_NE(out.find("malformed YAML: more than 10000 values once aliases (*name) are expanded"),
            std::string::npos)
      << out.substr(0, 300);
  // A few aliases, as people use them, are fine.
  EXPECT_EQ(Problems("num_processes: 2\ngpu_ids: &ids [0, 1]\nranks_filter: *ids\n"), "");
}

TEST(ConfigLoaderTest, AFileOverTheSizeLimitIsRefusedUnread) {
  testing::TempDir dir;
  const std::string path =
      dir.Write("big.yaml", "num_processes: 1\n" + std::string(2 << 20, '#') + "\n");
  Config c;
  SourceMap sources;
  EXPECT_EQ(FormatDiagnostics(ApplyConfigFile(path, &c, &sources)),
            path +
                ": read config file: larger than 1048576 bytes; a config file is a few "
                "hundred bytes (is this the right file?)\n");
}

TEST(ConfigLoaderTest, ARelativeTokenFileIsNextToTheConfigFile) {
  testing::TempDir dir;
  Config c;
  SourceMap sources;
  const std::string path = dir.Write("node/cfg.yaml", "rdzv_token_file: rdzv_token\n");
  EXPECT_TRUE(ApplyConfigFile(path, &c, &sources).empty());
  EXPECT_EQ(c.rdzv_token_file, dir.path() + "/node/rdzv_token");
  ApplyConfigFile(dir.Write("abs.yaml", "rdzv_token_file: /etc/token\n"), &c, &sources);
  EXPECT_EQ(c.rdzv_token_file, "/etc/token");
}

// `accel-launch config` writes rdzv_token beside the config without naming it (accelerate refuses
// unknown keys); a config that names no token file finds it there, and only there.
TEST(ConfigLoaderTest, ATokenFileBesideAConfigThatNamesNoneIsUsed) {
  testing::TempDir dir;
  Config c;
  SourceMap sources;
  const std::string path = dir.Write("node/cfg.yaml", "num_machines: 2\n");
  EXPECT_TRUE(ApplyConfigFile(path, &c, &sources).empty());
  EXPECT_EQ(c.rdzv_token_file, "");
  dir.Write("node/rdzv_token", "t0ken\n");
  EXPECT_TRUE(ApplyConfigFile(path, &c, &sources).empty());
  EXPECT_EQ(c.rdzv_token_file, dir.path() + "/node/rdzv_token");
}

TEST(ConfigLoaderTest, CountsHaveUpperBounds) {
  EXPECT_EQ(Problems("num_processes: 1000000000\n"),
            "cfg.yaml:1:16: num_processes 1000000000 is more than the limit of 1048576 (the "
            "total over all machines)\n"
            "num_processes: 1000000000\n"
            "               ^\n");
  EXPECT_EQ(Problems("num_machines: 100000\n"),
            "cfg.yaml:1:15: num_machines 100000 is more than the limit of 65536\n"
            "num_machines: 100000\n"
            "              ^\n");
  EXPECT_EQ(Problems("num_processes: 2048\n"),
            "cfg.yaml:1:16: num_processes 2048 over 1 machine(s) is 2048 processes per machine, "
            "more than the limit of 1024\n"
            "num_processes: 2048\n"
            "               ^\n");
}

}  // namespace
}  // namespace accel::launcher
