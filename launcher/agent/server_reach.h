// CheckServerReachable: before a machine other than 0 joins, says plainly when machine 0's
// address cannot be reached at all, instead of waiting out rdzv_timeout (accelerate #3568: a name
// that resolves to the IPv6 address of a host that is not there hangs accelerate launch). Errors:
// the name does not resolve; or every address it resolves to has no route or no host (no answer
// to ARP / neighbour discovery). The test is a TCP connect to port 0 of each address: no service
// listens there, so a host that is up answers with a reset, and machine 0's launcher never sees
// it. A host that answers, or stays silent (a firewall), is left to the join and its timeout.
#ifndef ACCEL_LAUNCHER_AGENT_SERVER_REACH_H_
#define ACCEL_LAUNCHER_AGENT_SERVER_REACH_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace accel::launcher {

// How long the check may take: neighbour discovery and ARP give up after about 3 s.
inline constexpr absl::Duration kReachCheckBudget = absl::Seconds(4);

// `host` is main_process_ip (a name or an address). FAILED_PRECONDITION naming `host`, what it
// resolved to and why, when it cannot be reached; OK otherwise. Takes at most `budget`.
absl::Status CheckServerReachable(const std::string& host, absl::Duration budget);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_AGENT_SERVER_REACH_H_
