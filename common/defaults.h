// Every default deadline, interval, size limit and port in one place. Option
// structs initialise their members from these constants; nothing else writes the values.
// Standard library only (libaccel includes it too). libaccel's own defaults live in its
// installed header accel/defaults.h (an installed accel/options.h cannot include this file) and
// are included here, in the same namespace.
#ifndef ACCEL_COMMON_DEFAULTS_H_
#define ACCEL_COMMON_DEFAULTS_H_

#include <chrono>
#include <cstdint>

#include "worker/include/accel/defaults.h"

namespace accel::defaults {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Rendezvous: how long a Join waits for all machines (torchrun's default is 900 s).
inline constexpr seconds kRdzvTimeout{900};
// Machine 0's rendezvous port when the config gives none (accelerate's and torchrun's default);
// also MASTER_PORT when no free port can be picked.
inline constexpr int kMainProcessPort = 29500;
// Agent heartbeat period and how many missed periods declare an agent lost.
inline constexpr milliseconds kHeartbeatInterval{500};
inline constexpr int kMissedHeartbeatsLost = 6;
// Deadline of a single unary RPC (KV Set/Get without wait, Abort report).
inline constexpr seconds kRpcDeadline{10};
// Backoff while the rendezvous server is not up yet.
inline constexpr milliseconds kConnectBackoffInitial{50};
inline constexpr milliseconds kConnectBackoffMax{1000};
// How long a worker's first store call waits for the rendezvous server.
inline constexpr seconds kStoreConnectTimeout{30};
// How much longer than rdzv_timeout an agent's Join waits, so the server's timeout report (which
// machines arrived, which are missing) reaches it before its own deadline.
inline constexpr seconds kJoinGrace{5};
// How often the rendezvous server checks heartbeats when nothing else wakes it.
inline constexpr milliseconds kServerSweepInterval{100};
// How long the rendezvous server's shutdown waits for in-flight calls before cancelling them.
inline constexpr seconds kServerShutdownGrace{2};

// The shared-memory all-reduce: bytes per rank per slot (the segment holds two sets of slots);
// collectives move through it in chunks of this size.
inline constexpr std::int64_t kShmSlotBytes = 1 << 20;

// KV store limits.
inline constexpr std::int64_t kMaxKeyBytes = 1024;
inline constexpr std::int64_t kMaxValueBytes = 16 * 1024 * 1024;
inline constexpr std::int64_t kMaxStoreBytes = 512 * 1024 * 1024;
inline constexpr int kMaxKeysPerWait = 1024;
// Largest gRPC message the rendezvous server accepts (a value plus its key and namespace).
inline constexpr int kMaxMessageBytes = 17 * 1024 * 1024;

// Supervision: SIGTERM → shutdown grace → SIGKILL; how often workers are polled (hang checks);
// how long output pipes still open after every worker was reaped are drained.
inline constexpr seconds kShutdownGrace{30};
inline constexpr milliseconds kMonitorInterval{100};
inline constexpr seconds kOutputDrainTimeout{2};

}  // namespace accel::defaults

#endif  // ACCEL_COMMON_DEFAULTS_H_
