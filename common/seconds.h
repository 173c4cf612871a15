// Durations as seconds, the unit of every duration in a config file, a flag or an ACCEL_*
// variable (rdzv_timeout: 900, monitor_interval: 0.1). Standard library only: the config's
// defaults (launcher/config/config.h) are written with ToSeconds.
#ifndef ACCEL_COMMON_SECONDS_H_
#define ACCEL_COMMON_SECONDS_H_

#include <chrono>
#include <cstdint>

namespace accel {

// Returns `duration` in seconds, e.g. 0.1 for 100 ms.
template <class Rep, class Period>
constexpr double ToSeconds(std::chrono::duration<Rep, Period> duration) {
  return std::chrono::duration<double>(duration).count();
}

// Returns `seconds` as a duration truncated to whole milliseconds (0.0015 → 1 ms). For absl
// code: absl::FromChrono(FromSeconds(s)).
constexpr std::chrono::milliseconds FromSeconds(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

}  // namespace accel

#endif  // ACCEL_COMMON_SECONDS_H_
