// Writes a Config as YAML that `accelerate` itself reads (its keys, its spellings, sorted as
// PyYAML sorts them) and prints the resolved config with the origin of each value.
#ifndef ACCEL_LAUNCHER_CONFIG_WRITER_H_
#define ACCEL_LAUNCHER_CONFIG_WRITER_H_

#include <string>

#include "absl/status/status.h"
#include "launcher/config/config.h"
#include "launcher/config/source.h"

namespace accel::launcher {

// Returns the YAML text: accelerate's keys always, main_process_ip/port when set, and each of
// our additions only when it differs from its default (accelerate rejects unknown keys, so a
// file with only default additions stays readable by `accelerate launch`).
std::string ToConfigYaml(const Config& config);

// Returns "key: value  # origin" lines for every settable key (for `config validate`/`env`).
std::string FormatResolvedConfig(const Config& config, const SourceMap& sources);

// Writes `text` to `path` atomically (temporary file + rename), creating missing directories.
absl::Status WriteConfigFile(const std::string& path, const std::string& text);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_WRITER_H_
