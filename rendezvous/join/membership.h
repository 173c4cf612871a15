// Elastic membership: the rules by which a generation (an attempt of the rendezvous) is formed
// when the number of machines may vary between min_machines and num_machines (torchrun's
// --nnodes MIN:MAX). Pure functions and plain types, no gRPC, no clock: the coordinator
// (coordinator_elastic.cc) applies them and the tests drive them with made-up times.
//
// The rules (docs/config.md "Elastic membership"):
//   - A generation completes when num_machines (MAX) machines wait, or, with at least
//     min_machines (MIN) waiting, when every survivor of the previous generation has rejoined,
//     or when the last call (ElasticOptions::last_call after MIN was reached; after a restart,
//     survivor_wait) is over.
//   - A lost machine (its launcher or link gone, join/liveness.h) ends the generation: the
//     survivors form the next one without it, which counts as a restart; a machine that joins a
//     running generation ends it too (not counted), and enters the next one.
//   - Restarts are counted job-wide by the server; past max_restarts a loss ends the job.
//   - Fewer than MIN after rdzv_timeout: the job ends, naming the loss that caused it.
#ifndef ACCEL_RENDEZVOUS_JOIN_MEMBERSHIP_H_
#define ACCEL_RENDEZVOUS_JOIN_MEMBERSHIP_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/defaults.h"

namespace accel::rendezvous {

struct ElasticOptions {
  // Off: the membership is fixed (every one of num_machines machines joins every attempt, a lost
  // machine ends the job).
  bool enabled = false;
  int min_machines = 1;  // MIN; MAX is ServerOptions::num_machines
  absl::Duration last_call = absl::FromChrono(defaults::kRdzvLastCall);
  int max_restarts = 0;  // the job-wide budget that lost machines draw on
  // After a restart: how long the survivors of the previous generation are waited for once MIN
  // machines wait (at least last_call).
  absl::Duration survivor_wait = absl::FromChrono(defaults::kRdzvSurvivorWait);
};

// What a forming generation looks like at one moment.
struct Forming {
  int waiting = 0;                  // machines whose Join waits
  bool survivors_expected = false;  // the generation follows a restart that had survivors
  bool survivors_in = false;        // and every one of them waits
  absl::Time min_reached = absl::InfiniteFuture();  // when `waiting` last reached MIN
};

// Returns when the forming generation completes: absl::InfinitePast() for now, a time for the
// end of the last call (or of the survivor wait), absl::InfiniteFuture() while fewer than MIN
// wait.
absl::Time CompletesAt(const ElasticOptions& options, int max_machines, const Forming& forming);

// Returns "machine R (host H)".
std::string NameMachine(int machine_rank, const std::string& host);

// Returns what changed between two generations, each machine_rank → host, with why each one
// that left did (`why_left`, by machine_rank; a machine missing there "did not rejoin"):
// "machine 1 (host b) left: lost: its connection ...; machine 2 (host c) joined". "" when
// nothing changed.
std::string DescribeChange(const std::map<int, std::string>& before,
                           const std::map<int, std::string>& after,
                           const std::map<int, std::string>& why_left);

// Returns the root-cause message of a loss that finds the budget spent: `loss`, then
// "; restart budget spent: max_restarts N, N restarts used (lost machines count)".
std::string BudgetSpentMessage(const std::string& loss, int max_restarts, std::int64_t used);

// Returns the DEADLINE_EXCEEDED status the machines waiting get when fewer than MIN joined
// within `timeout` after generation `attempt` began forming: how many joined, which, and why the
// generation changed (`cause`, the loss that took the job below MIN).
absl::Status BelowMinError(const std::string& run_id, std::int64_t attempt,
                           const ElasticOptions& options, absl::Duration timeout,
                           const std::vector<int>& waiting, const std::string& cause);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_JOIN_MEMBERSHIP_H_
