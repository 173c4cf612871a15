// The config writer: awkward strings round-trip through YAML quoting.
#include "launcher/config/writer.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/commands/questionnaire.h"
#include "launcher/config/loader.h"
#include "launcher/config/schema.h"
#include "launcher/config/validate.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;

TEST(ConfigWriterTest, AwkwardStringsRoundTrip) {
  for (const std::string value :
       {"no", "", "a: b", "#x", "it's", "123", "/tmp/x y", "- a", "true", "'q'"}) {
    Config c;
    c.log_dir = value;
    c.main_process_ip = value.empty() ? "" : "h" + value;
    Config loaded;
    SourceMap sources;
    const std::string yaml = ToConfigYaml(c);
    EXPECT_EQ(FormatDiagnostics(ApplyConfigText("w.yaml", yaml, &loaded, &sources)), "") << yaml;
    EXPECT_EQ(loaded.log_dir, value) << yaml;
    EXPECT_EQ(loaded.main_process_ip, c.main_process_ip) << yaml;
  }
  EXPECT_EQ(YamlQuote("no"), "'no'");
  EXPECT_EQ(YamlQuote("it's"), "it's");
  EXPECT_EQ(YamlQuote("'q'"), "'''q'''");
  EXPECT_EQ(YamlQuote("10.0.0.1"), "10.0.0.1");
  EXPECT_EQ(YamlQuote("29500"), "'29500'");
}

}  // namespace
}  // namespace accel::launcher
