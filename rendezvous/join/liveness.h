// Liveness: whether a peer that heartbeats is alive, busy, or lost. No I/O, no threads: time
// comes in as arguments, so the coordinator, the agent and the tests drive it alike.
//
// Silence alone cannot tell a peer that is dead or cut off from one whose launcher gets no CPU
// time (its cores taken by workers). The peer's kernel can: it answers a TCP connect however busy
// the peer's processes are, and does not when the link is down or the host is gone. So, with
// `silent` the time since the peer's last heartbeat:
//
//   silent <  probe_after                          alive
//   silent >= probe_after                          suspect: its host is probed (wants_probe)
//   silent >= lost_after, and no probe attempt has been answered for probe_unanswered (every
//     attempt begun in that time went unanswered)   lost: "its host does not answer"
//   silent >= silent_lost                          lost although its host answers (a launcher
//                                                   stopped or deadlocked)
//
// An unanswered attempt counts once a control attempt (to this side's own port) begun no
// earlier was answered: it shows this side could complete a handshake, so the silence is the
// peer's (confirm_with_control). A peer that cannot be probed (no probe target) is lost after
// lost_after of silence. A process that dies is noticed elsewhere: its Watch stream (or its
// connection) closes.
//
// Not thread-safe: the owner guards it.
#ifndef ACCEL_RENDEZVOUS_JOIN_LIVENESS_H_
#define ACCEL_RENDEZVOUS_JOIN_LIVENESS_H_

#include <string>

#include "absl/time/time.h"
#include "common/defaults.h"

namespace accel::rendezvous {

struct LivenessOptions {
  absl::Duration heartbeat_interval = absl::FromChrono(defaults::kHeartbeatInterval);
  int missed_heartbeats_probe = defaults::kMissedHeartbeatsProbe;
  int missed_heartbeats_lost = defaults::kMissedHeartbeatsLost;
  // How long every probe attempt must have gone unanswered before a silent peer is lost.
  absl::Duration probe_unanswered = absl::FromChrono(defaults::kProbeUnansweredLost);
  absl::Duration silent_lost = absl::FromChrono(defaults::kSilentLost);
  // Whether an unanswered probe counts only once a control probe (of this side's own port, begun
  // no earlier than it) was answered: then a prober whose own kernel or network stack is too
  // starved to complete any handshake blames nobody.
  bool confirm_with_control = true;

  absl::Duration probe_after() const { return heartbeat_interval * missed_heartbeats_probe; }
  absl::Duration lost_after() const { return heartbeat_interval * missed_heartbeats_lost; }
};

// Returns "" when `options` are usable, else what is wrong ("heartbeat_interval must be > 0").
std::string ValidateLiveness(const LivenessOptions& options);

// A host to probe: a TCP port its kernel answers (grpc/tcp_probe.h probes it).
struct ProbeTarget {
  int key = 0;       // the caller's name for it (a machine rank)
  std::string host;  // address or host name
  int port = 0;
  bool operator==(const ProbeTarget& other) const {
    return key == other.key && host == other.host && port == other.port;
  }
};

class Liveness {
 public:
  // A peer last heard from at `now`; `probed`: whether its host can be probed. `silence` names
  // what is missing in the verdict ("no heartbeat", "no answer to heartbeats").
  Liveness(const LivenessOptions& options, absl::Time now, bool probed,
           std::string silence = "no heartbeat");

  // Records a heartbeat (or any answer) from the peer at `now`.
  void Heartbeat(absl::Time now);
  // Records one probe attempt of the peer's host, begun at `started`, ended at `now`. Attempts
  // begun before the last heartbeat or the last answered attempt are stale and ignored.
  void ProbeResult(absl::Time started, bool answered, absl::Time now);
  // Records that a control attempt begun at `control_started` was answered: unanswered attempts
  // of the peer begun no later (within 100 ms) now count.
  void ControlAnswered(absl::Time control_started);

  struct Verdict {
    bool lost = false;
    std::string why;  // when lost: "no heartbeat for 3.0 s and its host does not answer ..."
    absl::Time next = absl::InfiniteFuture();  // when the verdict may change with no new input
  };
  Verdict Check(absl::Time now) const;

  // Whether the peer's host should be probed now (it is silent for probe_after or longer).
  bool WantsProbe(absl::Time now) const;

  absl::Time last_heartbeat() const { return last_heartbeat_; }

 private:
  LivenessOptions options_;
  bool probed_;
  std::string silence_;
  absl::Time last_heartbeat_;
  absl::Time last_answer_ = absl::InfinitePast();          // last answered probe attempt
  absl::Time unanswered_since_ = absl::InfiniteFuture();   // first unanswered attempt since then
  absl::Time unconfirmed_since_ = absl::InfiniteFuture();  // ... awaiting a control answer
};

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_JOIN_LIVENESS_H_
