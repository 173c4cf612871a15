// Reading environment variables with one rule for every process that reads them (libaccel, the
// test workers): a variable that is unset or empty is absent; an integer is a whole decimal
// number in [-1, 2^30] (a rank, a size, a count, or -1 for "not set"); a boolean is 1/true/yes
// or 0/false/no in any case. Anything else is an error the caller reports with the variable's
// name. Standard library only and header-only: libaccel's worker-only build has no abseil and no
// accel_common library. The names themselves are in common/env_contract.h.
#ifndef ACCEL_COMMON_ENV_READER_H_
#define ACCEL_COMMON_ENV_READER_H_

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

namespace accel::env {

inline constexpr long kMinInt = -1;
inline constexpr long kMaxInt = 1L << 30;

// Returns the value of `name`, or nullptr when it is unset or empty.
inline const char* Get(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

// Parses `text` as an integer by the rule above; nullopt when it is not one.
inline std::optional<int> ParseInt(const char* text) {
  errno = 0;
  char* end = nullptr;
  const long parsed = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || parsed < kMinInt || parsed > kMaxInt) {
    return std::nullopt;
  }
  return static_cast<int>(parsed);
}

// Parses `text` as a boolean by the rule above; nullopt when it is not one.
inline std::optional<bool> ParseBool(const char* text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "1" || lower == "true" || lower == "yes") return true;
  if (lower == "0" || lower == "false" || lower == "no") return false;
  return std::nullopt;
}

// Returns integer variable `name`: `fallback` when absent, nullopt when it does not parse.
inline std::optional<int> GetInt(const char* name, int fallback) {
  const char* value = Get(name);
  return value == nullptr ? std::optional<int>(fallback) : ParseInt(value);
}

// Returns boolean variable `name`: `fallback` when absent, nullopt when it does not parse.
inline std::optional<bool> GetBool(const char* name, bool fallback) {
  const char* value = Get(name);
  return value == nullptr ? std::optional<bool>(fallback) : ParseBool(value);
}

}  // namespace accel::env

#endif  // ACCEL_COMMON_ENV_READER_H_
