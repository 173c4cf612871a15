// Every default deadline, interval and size limit in one place.
#ifndef ACCEL_COMMON_DEFAULTS_H_
#define ACCEL_COMMON_DEFAULTS_H_

#include <chrono>
#include <cstdint>

namespace accel::defaults {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Rendezvous: how long a Join waits for all machines (torchrun's default is 900 s).
inline constexpr seconds kRdzvTimeout{900};
// Agent heartbeat period and how many missed periods declare an agent lost.
inline constexpr milliseconds kHeartbeatInterval{500};
inline constexpr int kMissedHeartbeatsLost = 6;
// Deadline of a single unary RPC (KV Set/Get without wait, Abort report).
inline constexpr seconds kRpcDeadline{10};
// Backoff while the rendezvous server is not up yet.
inline constexpr milliseconds kConnectBackoffInitial{50};
inline constexpr milliseconds kConnectBackoffMax{1000};
// How much longer than rdzv_timeout an agent's Join waits, so the server's timeout report (which
// machines arrived, which are missing) reaches it before its own deadline.
inline constexpr seconds kJoinGrace{5};
// How often the rendezvous server checks heartbeats when nothing else wakes it.
inline constexpr milliseconds kServerSweepInterval{100};

// KV store limits.
inline constexpr std::int64_t kMaxKeyBytes = 1024;
inline constexpr std::int64_t kMaxValueBytes = 16 * 1024 * 1024;
inline constexpr std::int64_t kMaxStoreBytes = 512 * 1024 * 1024;
inline constexpr int kMaxKeysPerWait = 1024;
// Largest gRPC message the rendezvous server accepts (a value plus its key and namespace).
inline constexpr int kMaxMessageBytes = 17 * 1024 * 1024;

// Supervision.
inline constexpr seconds kShutdownGrace{30};
inline constexpr milliseconds kMonitorInterval{100};

// Worker collectives.
inline constexpr seconds kCollectiveTimeout{300};
inline constexpr std::int64_t kFirstBucketBytes = 1 << 20;
inline constexpr std::int64_t kBucketBytes = 25 << 20;

}  // namespace accel::defaults

#endif  // ACCEL_COMMON_DEFAULTS_H_
