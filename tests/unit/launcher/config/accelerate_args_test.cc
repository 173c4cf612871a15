// accelerate launch's argparse namespace as accel-launch holds it: Python's str() of YAML and
// option values, the sections' key rules, the defaults per release.
#include "launcher/config/accelerate_args.h"

#include <gtest/gtest.h>

#include <string>

#include "launcher/config/config.h"
#include "launcher/config/yaml.h"

namespace accel::launcher {
namespace {

YamlValue Parse(const std::string& text) {
  YamlValue value;
  YamlError error;
  EXPECT_TRUE(ParseYaml(text, &value, &error)) << error.message;
  return value;
}

// str() of the value `text` has after PyYAML loads "k: <text>".
std::string Loaded(const std::string& text) {
  const YamlValue root = Parse("k: " + text + "\n");
  return PyFromYaml(root.entries.front().second).str;
}

TEST(AccelerateArgsTest, FloatsAsPythonReprWritesThem) {
  // Python 3: repr(float(x)) for each.
  const std::pair<double, const char*> cases[] = {
      {1.0, "1.0"},
      {0.5, "0.5"},
      {1e8, "100000000.0"},
      {1e16, "1e+16"},
      {1e-5, "1e-05"},
      {0.0001, "0.0001"},
      {123.456, "123.456"},
      {-2.5, "-2.5"},
      {1e22, "1e+22"},
      {0.1, "0.1"},
      {1.5e-7, "1.5e-07"},
      {0.0, "0.0"},
      {12345678.9, "12345678.9"},
      {9999999999999998.0, "9999999999999998.0"},
  };
  for (const auto& [value, repr] : cases) EXPECT_EQ(PyFloatRepr(value), repr) << value;
}

TEST(AccelerateArgsTest, YamlScalarsAsPyYamlLoadsThem) {
  EXPECT_EQ(Loaded("true"), "True");
  EXPECT_EQ(Loaded("yes"), "True");  // YAML 1.1
  EXPECT_EQ(Loaded("Off"), "False");
  EXPECT_EQ(Loaded("'yes'"), "yes");  // quoted: a string
  EXPECT_EQ(Loaded("2"), "2");
  EXPECT_EQ(Loaded("1_000"), "1000");
  EXPECT_EQ(Loaded("1.0"), "1.0");
  EXPECT_EQ(Loaded("1e8"), "1e8");  // PyYAML's floats need a dot
  EXPECT_EQ(Loaded("1.0e+8"), "100000000.0");
  EXPECT_EQ(Loaded("FULL_SHARD"), "FULL_SHARD");
  EXPECT_TRUE(PyFromYaml(Parse("k: ~\n").entries.front().second).none);
}

TEST(AccelerateArgsTest, SectionsCopyTheirKeysAsAccelerateDoes) {
  Config config;
  ASSERT_TRUE(SetAccelerateSection(Parse("sharding_strategy: 1\nfsdp_offload_params: true\n"),
                                   "fsdp_config", &config)
                  .ok());
  ASSERT_TRUE(
      SetAccelerateSection(Parse("backend: TE\nfp8_format: E4M3\n"), "fp8_config", &config).ok());
  ASSERT_TRUE(SetAccelerateSection(Parse("zero_stage: 3\noffload_param_device: cpu\n"),
                                   "deepspeed_config", &config)
                  .ok());
  EXPECT_EQ(config.accelerate_args["fsdp_sharding_strategy"].str, "1");
  EXPECT_EQ(config.accelerate_args["fsdp_offload_params"].str, "True");
  EXPECT_EQ(config.accelerate_args["fp8_backend"].str, "TE");
  EXPECT_EQ(config.accelerate_args["fp8_format"].str, "E4M3");
  EXPECT_EQ(config.deepspeed_config_keys,
            (std::vector<std::string>{"zero_stage", "offload_param_device"}));
  EXPECT_FALSE(config.use_parallelism_config);
  ASSERT_TRUE(
      SetAccelerateSection(Parse("parallelism_config_tp_size: 2\n"), "parallelism_config", &config)
          .ok());
  EXPECT_TRUE(config.use_parallelism_config);
}

TEST(AccelerateArgsTest, OptionsConvertAsArgparseTypes) {
  Config config;
  auto set = [&](const std::string& section, const std::string& text) {
    YamlValue value;
    value.kind = YamlValue::Kind::kScalar;
    value.scalar = text;
    return SetAccelerateSection(value, section, &config);
  };
  ASSERT_TRUE(set("fsdp_config", "fsdp_min_num_params=01000").ok());
  ASSERT_TRUE(set("deepspeed_config", "gradient_clipping=1").ok());
  ASSERT_TRUE(set("megatron_lm_config", "megatron_lm_use_custom_fsdp=false").ok());
  ASSERT_TRUE(set("fp8_config", "fp8_pad_inner_dim=false").ok());
  ASSERT_TRUE(set("fp8_config", "fp8_override_linear_precision=false,true,false").ok());
  EXPECT_EQ(config.accelerate_args["fsdp_min_num_params"].str, "1000");          // int()
  EXPECT_EQ(config.accelerate_args["gradient_clipping"].str, "1.0");             // float()
  EXPECT_EQ(config.accelerate_args["megatron_lm_use_custom_fsdp"].str, "True");  // bool("false")
  EXPECT_EQ(config.accelerate_args["fp8_pad_inner_dim"].str, "0");               // str_to_bool
  EXPECT_EQ(config.accelerate_args["fp8_override_linear_precision"].str, "(0, 1, 0)");
  EXPECT_EQ(set("deepspeed_config", "zero_stage=two").message(), "expected an integer, got 'two'");
  EXPECT_FALSE(set("deepspeed_config", "fsdp_version=2").ok());  // another section's option
}

TEST(AccelerateArgsTest, DefaultsFollowTheRelease) {
  Config config;
  EXPECT_EQ(ArgOrDefault(config, "fsdp_min_num_params").str, "100000000");
  EXPECT_EQ(ArgOrDefault(config, "fp8_enable_fsdp_float8_all_gather").str, "1");
  EXPECT_TRUE(ArgOrDefault(config, "zero_stage").none);
  config.accelerate_version = "0.29";
  EXPECT_EQ(ArgOrDefault(config, "fsdp_min_num_params").str, "100000000.0");
  config.accelerate_version = "0.20";
  EXPECT_EQ(ArgOrDefault(config, "fsdp_sharding_strategy").str, "1");
  EXPECT_EQ(ArgOrDefault(config, "fsdp_use_orig_params").str, "false");
}

TEST(AccelerateArgsTest, VersionsFromPointFifteen) {
  std::string version;
  EXPECT_TRUE(SetAccelerateVersion(Parse("k: 0.20.3\n").entries.front().second, &version).ok());
  EXPECT_EQ(version, "0.20");
  EXPECT_TRUE(SetAccelerateVersion(Parse("k: v1.14.0\n").entries.front().second, &version).ok());
  EXPECT_EQ(version, "1.14");
  EXPECT_FALSE(SetAccelerateVersion(Parse("k: 0.12.0\n").entries.front().second, &version).ok());
  EXPECT_FALSE(SetAccelerateVersion(Parse("k: latest\n").entries.front().second, &version).ok());
}

}  // namespace
}  // namespace accel::launcher
