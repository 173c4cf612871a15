// JsonQuote: a string as a JSON string literal. Standard library only, so the launcher and
// libaccel (whose worker-only build has no abseil) share it.
#ifndef ACCEL_COMMON_JSON_H_
#define ACCEL_COMMON_JSON_H_

#include <cstdio>
#include <string>
#include <string_view>

namespace accel {

// Returns `text` in double quotes with ", \ and control characters escaped (\n, \t, \u00XX).
inline std::string JsonQuote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned char>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace accel

#endif  // ACCEL_COMMON_JSON_H_
