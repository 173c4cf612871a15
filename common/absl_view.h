// Debian's abseil is built with its own absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW 0), so
// a std::string_view must be converted before it goes into absl::StrCat and friends.
#ifndef ACCEL_COMMON_ABSL_VIEW_H_
#define ACCEL_COMMON_ABSL_VIEW_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace accel {

inline absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace accel

#endif  // ACCEL_COMMON_ABSL_VIEW_H_
