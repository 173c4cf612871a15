// Where the job's status lives in the rendezvous store, and how it is written and read back.
// Namespace StatusNamespace(run_id) ("<run_id>/status"), kept across attempts so that a reader
// finds the attempt in progress:
//   job          what machine 0 says about the attempt: JobInfo, tab-separated
//   machine/<m>  the ranks of the generation's machine m (EncodeMachineStatus; m is the
//                machine's GROUP_RANK, its machine rank in a fixed job; each rank carries the
//                machine rank it was started with)
// An elastic job's generation (the attempt) publishes its own machines: a machine that left is
// not read (beyond num_machines, or its slot rewritten under the new attempt).
// Every call is one store call without waiting (the store's RPC deadline bounds it).
#ifndef ACCEL_LAUNCHER_STATUS_JOB_STORE_H_
#define ACCEL_LAUNCHER_STATUS_JOB_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "launcher/status/rank_status.h"
#include "launcher/status/status_format.h"
#include "rendezvous/store/store.h"

namespace accel::launcher {

// Returns the store namespace of run `run_id`'s status.
std::string StatusNamespace(const std::string& run_id);

struct JobInfo {
  int num_machines = 1;  // in the attempt (generation)
  int world_size = 1;
  std::int64_t attempt = 0;
  double straggler_threshold = 0;
  double straggler_window_s = 0;
};

absl::Status PublishJobInfo(rendezvous::Store& store, const JobInfo& info);
absl::Status PublishMachine(rendezvous::Store& store, const MachineStatus& machine);

// Returns machine `machine_rank`'s last publication; NOT_FOUND when it has published none,
// DATA_LOSS when it cannot be decoded, the store's error otherwise.
absl::StatusOr<MachineStatus> ReadMachine(rendezvous::Store& store, int machine_rank);

// Returns the job: JobInfo, then every machine's ranks (those of the current attempt; machines
// without any are listed as silent). NOT_FOUND when the job has published nothing; the store's
// errors (UNAUTHENTICATED for a wrong token) as they are.
struct StoredJob {
  JobInfo info;
  JobView view;
  std::map<int, std::uint64_t> seqs;  // machine → seq of what was read
};
absl::StatusOr<StoredJob> ReadJob(rendezvous::Store& store, const std::string& run_id);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_STATUS_JOB_STORE_H_
