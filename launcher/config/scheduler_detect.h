// Slurm, Open MPI and Kubernetes detection: when the launcher runs inside a Slurm job
// step (SLURM_JOB_ID with SLURM_NODEID/SLURM_NNODES/SLURM_JOB_NODELIST) or under mpirun
// (OMPI_COMM_WORLD_RANK/_SIZE, one launcher per machine), the scheduler supplies machine_rank,
// num_machines and, for Slurm, main_process_ip (the first host of the node list) and, unless the
// config file sets it, main_process_port (defaults::kSlurmPortBase + job id % kSlurmPortSpan). In a
// pod of a Kubernetes indexed Job (JOB_COMPLETION_INDEX) the index is machine_rank; num_machines
// and main_process_ip come from the pod template (ACCEL_NUM_MACHINES, ACCEL_MAIN_PROCESS_IP).
#ifndef ACCEL_LAUNCHER_CONFIG_SCHEDULER_DETECT_H_
#define ACCEL_LAUNCHER_CONFIG_SCHEDULER_DETECT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "launcher/config/source.h"

namespace accel::launcher {

// One value the scheduler supplies, with the variable it came from.
struct SchedulerValue {
  std::string key;        // config key: machine_rank, num_machines or main_process_ip
  std::string value;      // as text
  std::string origin;     // e.g. "SLURM_NODEID=1"
  bool fallback = false;  // applied only when the config file left the key unset
};

struct SchedulerInfo {
  std::string name;  // "Slurm", "Open MPI", "Kubernetes", or "" when none is present
  std::vector<SchedulerValue> values;
};

// Reads the scheduler variables. A malformed variable (e.g. an unparsable node list) is an
// error naming it; no scheduler present → an empty SchedulerInfo.
absl::StatusOr<SchedulerInfo> DetectScheduler(const EnvLookup& env);

// Expands a Slurm host list: "gpu[01-04,07]" → gpu01 gpu02 gpu03 gpu04 gpu07; "a,b" → a b;
// several bracket groups ("n[1-2]-ib[3-4]" → n1-ib3 n1-ib4 n2-ib3 n2-ib4); zero padding is kept
// from the range's first number. Errors name the offending part.
absl::StatusOr<std::vector<std::string>> ExpandNodeList(absl::string_view list);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_SCHEDULER_DETECT_H_
