// Loads accelerate's default_config.yaml (plus our keys) onto a Config, recording where each
// value came from. JSON files (accelerate reads `.json` configs, and `accelerate config default`
// writes JSON) load the same way: JSON is YAML. A key whose value is null, `~` or empty means
// "unset", as accelerate's loader reads it: the key keeps its default. Every problem in the file
// is collected, not just the first: malformed YAML (including "key:value" without a space),
// unknown keys (with "did you mean"), duplicate keys, wrong types and unsupported sections.
// Cross-field checks live in validate.h.
#ifndef ACCEL_LAUNCHER_CONFIG_LOADER_H_
#define ACCEL_LAUNCHER_CONFIG_LOADER_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "launcher/config/config.h"
#include "launcher/config/diagnostics.h"
#include "launcher/config/source.h"

namespace accel::launcher {

// The rendezvous token file `accel-launch config` writes beside a multi-machine config file. A
// config file without rdzv_token_file uses this file when it exists: the config stays one that
// accelerate itself loads (it refuses keys it does not know).
inline constexpr char kTokenFileName[] = "rdzv_token";

// Applies the YAML `text` of the file `path` onto `config`; each key set is recorded in
// `sources` with its position. Returns every problem found (empty = the file is fine). Keys with
// a bad value leave `config` unchanged. `empty` (optional) is set to whether the file holds no
// keys at all (nothing but whitespace and comments, or an empty mapping).
std::vector<Diagnostic> ApplyConfigText(const std::string& path, absl::string_view text,
                                        Config* config, SourceMap* sources, bool* empty = nullptr);

// Reads `path` and applies it as ApplyConfigText does; an unreadable file, or one larger than
// defaults::kMaxConfigFileBytes, is one problem. A relative rdzv_token_file is taken relative to
// the file's directory.
std::vector<Diagnostic> ApplyConfigFile(const std::string& path, Config* config, SourceMap* sources,
                                        bool* empty = nullptr);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_LOADER_H_
