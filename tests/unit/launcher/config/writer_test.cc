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

// Plain scalars PyYAML (YAML 1.1) would read as something else are quoted; others are not.
TEST(ConfigWriterTest, QuotesWhatPyYamlWouldNotReadAsAString) {
  for (const char* other : {"NO", "no", "Off", "yes", "~", "null", "0", "1_000", "0x1F", "017",
                            "1:30", "1.5", ".5", ".inf", "2024-01-02", "=", "<<"}) {
    EXPECT_EQ(YamlQuote(other).front(), '\'') << other;
  }
  for (const char* plain :
       {"1e3" /* PyYAML's floats need a dot */, "MULTI_GPU", "LOCAL_MACHINE", "all", "0,1",
        "10.0.0.1", "static", "main", "fp16", "/tmp/logs", "node-1"}) {
    EXPECT_EQ(YamlQuote(plain), plain);
  }
}

TEST(ConfigWriterTest, WritesNoAndGpuIdsAsStrings) {
  Config c;
  c.gpu_ids = "1";
  const std::string yaml = ToConfigYaml(c);
  EXPECT_THAT(yaml, HasSubstr("distributed_type: 'NO'\n"));  // bare NO is PyYAML's False
  EXPECT_THAT(yaml, HasSubstr("mixed_precision: 'no'\n"));
  EXPECT_THAT(yaml, HasSubstr("gpu_ids: '1'\n"));  // accelerate splits it as a string
  EXPECT_THAT(yaml, ::testing::Not(HasSubstr("dynamo")));
  c.dynamo_backend = "INDUCTOR";
  EXPECT_THAT(ToConfigYaml(c),
              HasSubstr("dynamo_config: {dynamo_backend: INDUCTOR, dynamo_mode: default, "
                        "dynamo_use_dynamic: false, dynamo_use_fullgraph: false, "
                        "dynamo_use_regional_compilation: false}\n"));
  Config loaded;
  SourceMap sources;
  EXPECT_EQ(FormatDiagnostics(ApplyConfigText("w.yaml", ToConfigYaml(c), &loaded, &sources)), "");
  EXPECT_EQ(loaded.dynamo_backend, "INDUCTOR");
}

TEST(ConfigWriterTest, JsonValuesAreTyped) {
  Config c;
  c.num_processes = 4;
  c.main_process_ip = "";
  c.ranks_filter = {0, 2};
  c.use_cpu = true;
  auto json = [&c](const char* key) { return JsonValue(*FindKey(key), c); };
  EXPECT_EQ(json("num_processes"), "4");
  EXPECT_EQ(json("use_cpu"), "true");
  EXPECT_EQ(json("downcast_bf16"), "false");  // written 'no' in YAML
  EXPECT_EQ(json("distributed_type"), "\"NO\"");
  EXPECT_EQ(json("mixed_precision"), "\"no\"");
  EXPECT_EQ(json("main_process_ip"), "null");
  EXPECT_EQ(json("gpu_ids"), "\"all\"");
  EXPECT_EQ(json("ranks_filter"), "[0, 2]");
  EXPECT_EQ(json("local_ranks_filter"), "[]");
  EXPECT_EQ(json("monitor_interval"), "0.1");
}

TEST(ConfigWriterTest, EffectiveValuesShowWhatRunsAndWhy) {
  Config c;
  c.mixed_precision = MixedPrecision::kFp16;
  SourceMap sources;
  sources["mixed_precision"] = ValueOrigin{ValueOrigin::Kind::kFile, "cfg.yaml", 3, 18, ""};
  const std::string text = FormatResolvedConfig(
      c, sources, {{"mixed_precision", {"'no'", "fp16 needs a GPU; running in fp32 on CPU"}}});
  EXPECT_THAT(text, HasSubstr("  mixed_precision: 'no'  # cfg.yaml:3; configured fp16, but fp16 "
                              "needs a GPU; running in fp32 on CPU\n"));
}

}  // namespace
}  // namespace accel::launcher
