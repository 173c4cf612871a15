// Value parsers behind the schema's setters. Each returns InvalidArgument with the cause only
// ("expected an integer, got 'two'"); the caller adds the key and where the value came from.
// A failed parse leaves the output untouched.
#ifndef ACCEL_LAUNCHER_CONFIG_VALUES_H_
#define ACCEL_LAUNCHER_CONFIG_VALUES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "launcher/config/config.h"
#include "launcher/config/yaml.h"

namespace accel::launcher {

// Parses a boolean spelled true/false, yes/no, on/off, y/n or 1/0 (any case).
bool ParseBool(absl::string_view text, bool* out);

// Wraps flag or environment text as a scalar value for the setters.
YamlValue ScalarValue(absl::string_view text);

namespace values {

// Describes a value for messages: 'text', a list, a mapping, nothing.
std::string Describe(const YamlValue& v);

absl::Status SetBool(const YamlValue& v, bool* out);
absl::Status SetInt(const YamlValue& v, int* out);
absl::Status SetSeconds(const YamlValue& v, double* out);      // a number >= 0
absl::Status SetFraction(const YamlValue& v, double* out);     // a number > 0 and <= 1
absl::Status SetPositive(const YamlValue& v, double* out);     // a number > 0
absl::Status SetString(const YamlValue& v, std::string* out);  // null → ""
// Reads "0,1,3", one integer, or a YAML list of integers, each >= 0.
absl::Status ParseIntList(const YamlValue& v, std::vector<int>* out);

// Key-specific setters (enums with "did you mean", unsupported values named as such).
absl::Status SetGpuIds(const YamlValue& v, Config* c);
absl::Status SetDistributedType(const YamlValue& v, Config* c);
absl::Status SetMixedPrecision(const YamlValue& v, Config* c);
absl::Status SetComputeEnvironment(const YamlValue& v, Config* c);
absl::Status SetRdzvBackend(const YamlValue& v, Config* c);
absl::Status SetLogMode(const YamlValue& v, Config* c);
absl::Status SetRanksFilter(const YamlValue& v, Config* c);

// An accelerate sub-config we cannot honour: fine when absent or empty, else "<what> is not
// supported". `present` tells whether it had content.
absl::Status Section(const YamlValue& v, absl::string_view what, bool* present);
absl::Status SetOtherSection(const YamlValue& v, absl::string_view what);
// torch.compile: a backend accelerate knows (NO, INDUCTOR, ... any case, stored upper case) and a
// mode (default, reduce-overhead, max-autotune).
absl::Status SetDynamoBackend(const YamlValue& v, Config* c);
absl::Status SetDynamoMode(const YamlValue& v, Config* c);
// dynamo_config: a mapping of dynamo_backend, dynamo_mode, dynamo_use_fullgraph,
// dynamo_use_dynamic and dynamo_use_regional_compilation (each as the key of that name).
absl::Status SetDynamo(const YamlValue& v, Config* c);
// ipex_config: fine when empty or every entry is off (false, no, NO).
absl::Status SetIpex(const YamlValue& v, Config* c);
// accelerate's old `fp16: true`: sets mixed_precision fp16 (false leaves it alone).
absl::Status SetLegacyFp16(const YamlValue& v, Config* c);
// A switch we cannot honour: fine when absent or off.
absl::Status SetOff(const YamlValue& v, absl::string_view what);

}  // namespace values
}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_VALUES_H_
