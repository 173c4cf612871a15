// Printable: text from outside (a config file, a peer's message) made safe to put on a terminal.
#ifndef ACCEL_COMMON_PRINTABLE_H_
#define ACCEL_COMMON_PRINTABLE_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace accel {

// Returns `text` with every byte a terminal would act on written as \xNN: control bytes other
// than tab (ESC, CR, NUL, ...), DEL, the C1 controls U+0080..U+009F, and bytes that are not
// part of valid UTF-8. Printable ASCII, tabs and valid UTF-8 pass unchanged. A backslash stays
// as it is (the output is for reading, not for unescaping).
std::string Printable(std::string_view text);

}  // namespace accel

#endif  // ACCEL_COMMON_PRINTABLE_H_
