// BuildJoinResponses: what every machine of a completed attempt is told (pure, no gRPC).
#ifndef ACCEL_RENDEZVOUS_JOIN_RESULT_H_
#define ACCEL_RENDEZVOUS_JOIN_RESULT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "accel/rendezvous/v1/rendezvous.pb.h"
#include "rendezvous/join/checks.h"

namespace accel::rendezvous {

struct AttemptInfo {
  std::string run_id;
  std::int64_t attempt = 0;
  int num_processes = 0;    // expected world size; 0 = not checked
  std::string master_host;  // MASTER_ADDR and store host; "" = machine 0's address
  int master_port = 0;
  int store_port = 0;
  std::vector<std::string> warnings;
  std::int64_t restart_count = 0;  // job-wide restarts so far
  std::string membership;          // what changed since the previous attempt ("" = nothing)
  bool continues = false;          // JoinResponse.continues
};

// Returns FAILED_PRECONDITION (listing every machine's count) when info.num_processes > 0 and
// the machines' local_processes do not add up to it. O(machines).
absl::Status CheckWorldSize(const std::vector<const JoinedMachine*>& machines,
                            const AttemptInfo& info);

// Returns one response per machine, in the order of `machines` (which is by machine_rank, all
// ranks present): base ranks are prefix sums of local_processes, `self` is the machine's own
// entry, the machine list only for requests that set want_machines. Fails as CheckWorldSize does.
// O(machines) per response that wants the machine list, O(1) otherwise.
absl::StatusOr<std::vector<v1::JoinResponse>> BuildJoinResponses(
    const std::vector<const JoinedMachine*>& machines, const AttemptInfo& info);

// Returns "host:port", bracketing an IPv6 host.
std::string HostPort(const std::string& host, int port);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_JOIN_RESULT_H_
