#include "launcher/status/job_store.h"

#include <algorithm>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"

namespace accel::launcher {
namespace {

constexpr char kJobKey[] = "job";

std::string MachineKey(int machine_rank) { return absl::StrCat("machine/", machine_rank); }

absl::StatusOr<JobInfo> ReadJobInfo(rendezvous::Store& store) {
  absl::StatusOr<std::string> text = store.Get(kJobKey, absl::ZeroDuration());
  if (!text.ok()) return text.status();
  std::vector<absl::string_view> f = absl::StrSplit(*text, '\t');
  JobInfo info;
  if (f.size() != 5 || !absl::SimpleAtoi(f[0], &info.num_machines) ||
      !absl::SimpleAtoi(f[1], &info.world_size) || !absl::SimpleAtoi(f[2], &info.attempt) ||
      !absl::SimpleAtod(f[3], &info.straggler_threshold) ||
      !absl::SimpleAtod(f[4], &info.straggler_window_s) || info.num_machines < 1 ||
      info.num_machines > 1 << 16) {
    return absl::DataLossError(absl::StrCat("job status: cannot read '", *text, "'"));
  }
  return info;
}

}  // namespace

std::string StatusNamespace(const std::string& run_id) { return absl::StrCat(run_id, "/status"); }

absl::Status PublishJobInfo(rendezvous::Store& store, const JobInfo& info) {
  return store.Set(kJobKey,
                   absl::StrCat(info.num_machines, "\t", info.world_size, "\t", info.attempt, "\t",
                                info.straggler_threshold, "\t", info.straggler_window_s));
}

absl::Status PublishMachine(rendezvous::Store& store, const MachineStatus& machine) {
  return store.Set(MachineKey(machine.machine_rank), EncodeMachineStatus(machine));
}

absl::StatusOr<MachineStatus> ReadMachine(rendezvous::Store& store, int machine_rank) {
  absl::StatusOr<std::string> text = store.Get(MachineKey(machine_rank), absl::ZeroDuration());
  if (!text.ok()) return text.status();
  std::optional<MachineStatus> machine = DecodeMachineStatus(*text);
  if (!machine.has_value()) {
    return absl::DataLossError(absl::StrCat("machine ", machine_rank, "'s status: cannot decode"));
  }
  return *std::move(machine);
}

absl::StatusOr<StoredJob> ReadJob(rendezvous::Store& store, const std::string& run_id) {
  absl::StatusOr<JobInfo> info = ReadJobInfo(store);
  if (!info.ok()) return info.status();
  StoredJob job;
  job.info = *info;
  job.view.run_id = run_id;
  job.view.attempt = info->attempt;
  job.view.num_machines = info->num_machines;
  job.view.world_size = info->world_size;
  for (int m = 0; m < info->num_machines; ++m) {
    absl::StatusOr<MachineStatus> machine = ReadMachine(store, m);
    if (!machine.ok() && !absl::IsNotFound(machine.status()) &&
        !absl::IsDataLoss(machine.status())) {
      return machine.status();  // the store itself failed (or refused us)
    }
    if (!machine.ok() || machine->attempt != info->attempt) {
      job.view.silent_machines.push_back(m);
      continue;
    }
    job.seqs[m] = machine->seq;
    for (RankStatus& r : machine->ranks) job.view.ranks.push_back(std::move(r));
  }
  std::sort(job.view.ranks.begin(), job.view.ranks.end(),
            [](const RankStatus& a, const RankStatus& b) { return a.rank < b.rank; });
  return job;
}

}  // namespace accel::launcher
