// Writes a Config as YAML that `accelerate` itself reads (its keys, its spellings, sorted as
// PyYAML sorts them) and prints the resolved config with the origin of each value.
#ifndef ACCEL_LAUNCHER_CONFIG_WRITER_H_
#define ACCEL_LAUNCHER_CONFIG_WRITER_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "launcher/config/config.h"
#include "launcher/config/schema.h"
#include "launcher/config/source.h"

namespace accel::launcher {

// Returns the YAML text: accelerate's keys always, main_process_ip/port when set, and each of
// our additions only when it differs from its default (accelerate rejects unknown keys, so a
// file with only default additions stays readable by `accelerate launch`).
std::string ToConfigYaml(const Config& config);

// What a launch will use for a key when a fallback changes the configured value, and why, e.g.
// {"mixed_precision", {"no", "fp16 needs a GPU; no GPU found: fp32 on CPU"}}.
struct EffectiveValue {
  std::string value;   // as YAML writes it
  std::string reason;  // one clause
};
using EffectiveValues = std::map<std::string, EffectiveValue>;

// Returns "key: value  # origin" lines for every settable key (for `config validate`/`env`); a
// key in `effective` shows the value the launch uses: "key: no  # origin; asked fp16: <reason>".
std::string FormatResolvedConfig(const Config& config, const SourceMap& sources,
                                 const EffectiveValues& effective = {});

// Returns the value of `spec` in `config` as JSON: true/false for switches, a number for counts,
// ports and seconds, a list of numbers for rank lists, a string without YAML quoting otherwise,
// and null for an unset optional string.
std::string JsonValue(const KeySpec& spec, const Config& config);

// Writes `text` to `path` atomically (temporary file + rename), creating missing directories.
absl::Status WriteConfigFile(const std::string& path, const std::string& text);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_WRITER_H_
