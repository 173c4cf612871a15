// Join-time checks and rank assignment of the rendezvous (pure functions, no gRPC).
//
// Every check returns FAILED_PRECONDITION with a message naming both machines by machine_rank,
// host and address, e.g.
//   join rendezvous run_id=r1: duplicate machine_rank 1: machine_rank 1 (host b, address 10.0.0.2)
//   and machine_rank 1 (host c, address 10.0.0.3) both joined; give each machine its own
//   machine_rank
#ifndef ACCEL_RENDEZVOUS_JOIN_CHECKS_H_
#define ACCEL_RENDEZVOUS_JOIN_CHECKS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "accel/rendezvous/v1/rendezvous.pb.h"
#include "rendezvous/grpc/server.h"

namespace accel::rendezvous {

// A joined (or joining) machine as the server sees it.
struct JoinedMachine {
  v1::JoinRequest request;
  std::string address;  // first advertised address, else the address it connected from
};

// Returns whether `given` equals `expected`, in time that depends only on their lengths (tokens
// and machine secrets).
bool SecretsMatch(std::string_view expected, std::string_view given);

// Returns "machine_rank R (host H, address A)".
std::string DescribeMachine(const JoinedMachine& machine);

// Returns the host part of a gRPC peer string ("ipv4:1.2.3.4:5", "ipv6:[::1]:5",
// "ipv6:%5B::1%5D:5"); the input itself when it has no recognised form.
std::string PeerHost(std::string_view peer);

// Checks the request's own fields: machine_rank in [0, num_machines), local_processes >= 1,
// field sizes. INVALID_ARGUMENT.
absl::Status CheckRequestShape(const v1::JoinRequest& request, const ServerOptions& options);

// Checks `machine` against the server's run: run id (an empty one joins whatever run the
// server serves), num_machines, num_processes. `reference` names the other side: machine 0 when
// it has joined, else the server.
absl::Status CheckAgainstServer(const JoinedMachine& machine, const ServerOptions& options,
                                std::string_view reference);

// Checks `machine` against an already joined `peer`: config fingerprint (listing differing keys)
// and versions (appended to `warnings` unless `strict`, then FAILED_PRECONDITION).
absl::Status CheckAgainstPeer(const JoinedMachine& machine, const JoinedMachine& peer,
                              const std::string& run_id, bool strict,
                              std::vector<std::string>& warnings);

// Returns the duplicate-rank error for `incoming` colliding with `existing`.
absl::Status DuplicateRankError(const JoinedMachine& incoming, const JoinedMachine& existing,
                                const std::string& run_id);

// Returns the base global rank of each machine: prefix sums of `local_processes`, which is in
// machine_rank order.
std::vector<int> AssignBaseRanks(const std::vector<int>& local_processes);

// Returns the DEADLINE_EXCEEDED status sent to every waiting machine when `timeout` runs out:
// which machine ranks arrived, from where, which are missing, and the joins refused meanwhile
// (`refused`, e.g. a wrong token: those do not end the wait, since anyone can send them).
absl::Status TimeoutError(const std::string& run_id, std::int64_t attempt, absl::Duration timeout,
                          int num_machines, const std::vector<const JoinedMachine*>& arrived,
                          const std::vector<std::string>& refused = {});

// Returns the error sent to the machines waiting in an attempt when a join with the job's token
// was refused by a check (`why`): the attempt cannot complete, and they learn why at once.
absl::Status RefusedPeerError(const JoinedMachine& refused, const absl::Status& why,
                              const std::string& run_id);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_JOIN_CHECKS_H_
