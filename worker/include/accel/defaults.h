// accel::defaults: the defaults of accel::Options (options.h), one constant each. Installed with
// libaccel; common/defaults.h includes this header, so together they hold every default of the
// project once. Standard library only.
#ifndef ACCEL_DEFAULTS_H_
#define ACCEL_DEFAULTS_H_

#include <chrono>
#include <cstdint>

namespace accel::defaults {

// Deadline of one collective (all-reduce, broadcast, barrier).
inline constexpr std::chrono::seconds kCollectiveTimeout{300};
// How much longer than its deadline DDP waits for a collective whose backend ignores the deadline
// before aborting the communicator.
inline constexpr std::chrono::seconds kCollectiveGrace{5};
// How long forming the process group waits for every rank and the store.
inline constexpr std::chrono::seconds kConnectTimeout{300};

// DDP buckets: the first one small so communication starts early, the rest large.
inline constexpr std::int64_t kFirstBucketBytes = 1 << 20;
inline constexpr std::int64_t kBucketBytes = 25 << 20;

// Dynamic loss scaling: torch.cuda.amp.GradScaler's defaults.
inline constexpr double kInitScale = 65536.0;
inline constexpr double kGrowthFactor = 2.0;
inline constexpr double kBackoffFactor = 0.5;
inline constexpr int kGrowthInterval = 2000;

}  // namespace accel::defaults

#endif  // ACCEL_DEFAULTS_H_
