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
// Elastic membership (--nnodes MIN:MAX): how long a generation with at least MIN machines waits
// for more before it starts (torchrun's last call is 30 s; a joiner that misses it enters at the
// next generation anyway, so short costs little).
inline constexpr milliseconds kRdzvLastCall{1000};
// Elastic membership: after a restart, how long the next generation waits for the previous
// one's survivors (they stop their workers first) once MIN machines wait; one that has not
// rejoined by then is left out and enters the generation after (a restart that is not counted).
// Short, because a survivor that died meanwhile is waited for this long.
inline constexpr seconds kRdzvSurvivorWait{3};
// Machine 0's rendezvous port when the config gives none (accelerate's and torchrun's default);
// also MASTER_PORT when no free port can be picked.
inline constexpr int kMainProcessPort = 29500;
// Under Slurm with no port set: kSlurmPortBase + SLURM_JOB_ID % kSlurmPortSpan, the same on every
// node of a job, different for jobs that share a first node (below Linux's ephemeral ports).
inline constexpr int kSlurmPortBase = 10000;
inline constexpr int kSlurmPortSpan = 10000;
// Heartbeats and lost machines (docs/config.md "Heartbeats and lost machines"). Every agent
// heartbeats machine 0's server every kHeartbeatInterval from a thread that does nothing else. A
// machine silent for kMissedHeartbeatsProbe intervals is suspect: its host is probed (a TCP
// connect its kernel answers, whether or not its launcher gets CPU time), one attempt of
// kProbeAttemptTimeout after another. It is lost when it has been silent for
// kMissedHeartbeatsLost intervals and no probe has been answered for kProbeUnansweredLost (link
// down, host gone), or when silent for kSilentLost although its host answers (a stopped or
// deadlocked launcher). An unanswered probe counts only once the prober's own port answered a
// probe begun no earlier (join/liveness.h). A launcher that dies closes its Watch stream and is
// lost at once. Each agent judges machine 0's server by the same rules.
inline constexpr milliseconds kHeartbeatInterval{500};
inline constexpr int kMissedHeartbeatsProbe = 3;
inline constexpr int kMissedHeartbeatsLost = 6;
inline constexpr milliseconds kProbeAttemptTimeout{1500};
inline constexpr milliseconds kProbeUnansweredLost{1500};
inline constexpr seconds kSilentLost{30};
// Deadline of a single unary RPC (KV Set/Get without wait, Abort report).
inline constexpr seconds kRpcDeadline{10};
// The longest a launcher stopped by a signal waits to tell the rendezvous so
// (RendezvousClient::ReportStopping): machine 0's server, signalled at the same moment, may be
// gone, and the launcher must end well within a scheduler's kill wait.
inline constexpr milliseconds kStoppingReportDeadline{2000};
// Backoff while the rendezvous server is not up yet.
inline constexpr milliseconds kConnectBackoffInitial{50};
inline constexpr milliseconds kConnectBackoffMax{1000};
// How long one connection attempt to the rendezvous server (TCP, TLS handshake, HTTP/2 settings)
// may take before it is abandoned and retried.
inline constexpr milliseconds kConnectAttemptTimeout{2000};
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
// Largest Join, Heartbeat or Report request the rendezvous service handles (they hold a machine's
// name, addresses, settings and a root-cause message; the store's values are the large ones).
inline constexpr int kMaxRendezvousRequestBytes = 64 * 1024;
// Bounds of the rendezvous server before and after authentication (issue 24): a TLS handshake
// (where a peer without the token is refused) must end within kServerHandshakeTimeout; one
// connection carries at most kServerMaxConcurrentStreams calls at once (more wait in the client:
// a process's channels share one connection, and thousands of store waits on it are legitimate,
// so the cap is high; only a token holder gets that far); a connection with no
// call for kServerMaxConnectionIdle is closed (clients reconnect when they next call); gRPC's
// buffers are held to kServerMemoryQuotaBytes. Debian's gRPC 1.51 has no cap on the number of
// connections: those still in their handshake are capped by rendezvous/grpc/connection_gate.h
// (GateLimits), the rest by RLIMIT_NOFILE (raised to its hard limit).
inline constexpr seconds kServerHandshakeTimeout{10};
inline constexpr int kServerMaxConcurrentStreams = 4096;
inline constexpr seconds kServerMaxConnectionIdle{300};
inline constexpr std::int64_t kServerMemoryQuotaBytes = 128 * 1024 * 1024;
// Failed TLS handshakes are logged once, then summed up at most this often.
inline constexpr seconds kRefusedHandshakeSummaryEvery{60};

// Bounded input (issue 12). A config file larger than this, or whose YAML aliases expand to
// more nodes than this, is refused before it is read further (exit 2).
inline constexpr std::int64_t kMaxConfigFileBytes = 1024 * 1024;
inline constexpr int kMaxConfigYamlNodes = 10000;
// Upper bounds checked by validation before anything is sized by them.
inline constexpr int kMaxMachines = 65536;
inline constexpr int kMaxProcesses = 1 << 20;         // total over all machines
inline constexpr int kMaxProcessesPerMachine = 1024;  // workers one launcher spawns
// What the KV store counts per entry on top of its namespace, key and value bytes (hash-table
// slot, string headers, allocator rounding), so that its byte cap bounds its resident memory.
inline constexpr std::int64_t kStoreEntryOverheadBytes = 256;

// Supervision: SIGTERM → shutdown grace → SIGKILL; how often workers are polled (hang checks);
// how long output pipes still open after every worker was reaped are drained.
inline constexpr seconds kShutdownGrace{30};
inline constexpr milliseconds kMonitorInterval{100};
inline constexpr seconds kOutputDrainTimeout{2};
// A worker killed by SIGTERM/SIGINT/SIGHUP from outside counts as a failure only if no signal
// reaches the launcher within this long (a scheduler signals workers and launcher alike; SIGKILL
// is nobody's first signal, so a worker killed by it is a failure at once).
inline constexpr milliseconds kOwnSignalGrace{1000};

// Hang detection (jobs of two or more processes): a job in which no rank advanced (libaccel's
// progress counters), used CPU or wrote output for kHangTimeout is ended and the rank that stopped
// first named. Long enough for a slow step, a checkpoint save or an evaluation pass on one rank
// (it uses CPU), short enough that a stopped or deadlocked job ends in about a minute.
inline constexpr seconds kHangTimeout{60};
// Start-up grace: a rank that has not yet completed its first step (progress record step 0) is
// not idle for hang detection for this long after it was spawned (importing torch, loading data
// and building the model on a loaded host), unless it is stopped. 600 s: torch.distributed's
// default collective timeout and the c10d rendezvous join timeout.
inline constexpr seconds kStartupTimeout{600};
// How far above the hang timeout the workers' collective deadline lies (ACCEL_COLLECTIVE_TIMEOUT_MS
// is the longer of libaccel's kCollectiveTimeout and hang timeout + this).
inline constexpr seconds kHangCollectiveMargin{30};
// A rank "uses CPU" while its process tree used at least this fraction of one core over the last
// kHangCpuWindow (blocked ranks still tick ~1% in background threads).
inline constexpr double kHangBusyCpuFraction = 0.05;
inline constexpr milliseconds kHangCpuWindow{1000};
// How often an agent publishes its ranks' progress to the rendezvous store and reads the job's,
// and the deadline of each of those store calls (a stuck call must not hold up a teardown).
inline constexpr milliseconds kProgressPublishInterval{500};
inline constexpr milliseconds kProgressStoreDeadline{1000};
// How long an agent whose ranks wait on a hung rank of another machine waits for that machine's
// report before it ends the job itself.
inline constexpr seconds kHangVerdictWait{3};
// How long an agent whose worker failed waits for the job's root cause from the rendezvous (it
// may be another machine's earlier failure) before it names its own.
inline constexpr seconds kRootCauseWait{2};

// The job's status (launcher/status): how often every machine samples its ranks and publishes
// them to the rendezvous store (machine 0's status line on a terminal is redrawn as often; in a
// pipe it prints a plain line every kStatusPipeLineEvery). A rank inside the same collective for
// kStatusWaitingAfter is "waiting"; one that wrote no progress record for
// kStatusNoProgressAfter after it started is "no progress reported".
inline constexpr milliseconds kStatusInterval{1000};
inline constexpr seconds kStatusPipeLineEvery{5};
inline constexpr milliseconds kStatusWaitingAfter{1000};
inline constexpr seconds kStatusNoProgressAfter{10};
// `accel-launch status`: the deadline of each of its store calls (and of reaching the server);
// `accel-launch report`: how long gnuplot may take to draw the heat map.
inline constexpr seconds kStatusQueryDeadline{5};
inline constexpr seconds kReportPlotTimeout{60};
// Straggler detection: a rank whose own work per step (step time minus time in collectives) over
// the last kStragglerWindow is more than kStragglerThreshold above the median rank's is named.
inline constexpr seconds kStragglerWindow{10};
inline constexpr double kStragglerThreshold = 0.25;
// Network preflight: a link whose bandwidth is below kPreflightThreshold of the median link's is
// flagged; each direction of a link is measured for about kPreflightLinkBudget; the whole
// preflight (connect, every link, the all-reduce) ends within kPreflightTimeout.
inline constexpr double kPreflightThreshold = 0.5;
inline constexpr milliseconds kPreflightLinkBudget{300};
inline constexpr seconds kPreflightTimeout{120};

}  // namespace accel::defaults

#endif  // ACCEL_COMMON_DEFAULTS_H_
