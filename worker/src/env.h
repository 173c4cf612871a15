// EnvInt / EnvBool: common/env_reader.h's rule for libaccel, with an accel::Error naming the
// variable when a value does not parse.
#ifndef ACCEL_WORKER_ENV_H_
#define ACCEL_WORKER_ENV_H_

#include <optional>
#include <string>

#include "accel/error.h"
#include "common/env_reader.h"

namespace accel::worker {

// Returns integer variable `name`, `fallback` when it is unset or empty. Throws accel::Error
// ("read environment RANK: not an integer: \"two\"") when it does not parse.
inline int EnvInt(const char* name, int fallback) {
  if (const std::optional<int> value = env::GetInt(name, fallback)) return *value;
  throw Error("read environment", name, "not an integer: \"" + std::string(env::Get(name)) + "\"");
}

// Returns boolean variable `name`, `fallback` when it is unset or empty. Throws accel::Error when
// it does not parse.
inline bool EnvBool(const char* name, bool fallback) {
  if (const std::optional<bool> value = env::GetBool(name, fallback)) return *value;
  throw Error("read environment", name, "not a boolean: \"" + std::string(env::Get(name)) + "\"");
}

}  // namespace accel::worker

#endif  // ACCEL_WORKER_ENV_H_
