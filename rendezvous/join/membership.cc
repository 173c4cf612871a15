#include "rendezvous/join/membership.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace accel::rendezvous {

absl::Time CompletesAt(const ElasticOptions& options, int max_machines, const Forming& forming) {
  if (forming.waiting >= max_machines) return absl::InfinitePast();
  if (forming.waiting < std::max(options.min_machines, 1)) return absl::InfiniteFuture();
  if (forming.survivors_in) return absl::InfinitePast();
  if (forming.survivors_expected) {
    return forming.min_reached + std::max(options.last_call, options.survivor_wait);
  }
  return forming.min_reached + options.last_call;
}

std::string NameMachine(int machine_rank, const std::string& host) {
  return absl::StrCat("machine ", machine_rank, " (host ", host.empty() ? "?" : host, ")");
}

std::string DescribeChange(const std::map<int, std::string>& before,
                           const std::map<int, std::string>& after,
                           const std::map<int, std::string>& why_left) {
  std::vector<std::string> parts;
  for (const auto& [rank, host] : before) {
    if (after.count(rank) != 0) continue;
    auto why = why_left.find(rank);
    parts.push_back(absl::StrCat(NameMachine(rank, host), " left: ",
                                 why != why_left.end() ? why->second : "it did not rejoin"));
  }
  for (const auto& [rank, host] : after) {
    if (before.count(rank) == 0) parts.push_back(absl::StrCat(NameMachine(rank, host), " joined"));
  }
  return absl::StrJoin(parts, "; ");
}

std::string BudgetSpentMessage(const std::string& loss, int max_restarts, std::int64_t used) {
  return absl::StrCat(loss, "; restart budget spent: max_restarts ", max_restarts, ", ", used,
                      " restarts used (lost machines and failures count, machines joining do "
                      "not)");
}

absl::Status BelowMinError(const std::string& run_id, std::int64_t attempt,
                           const ElasticOptions& options, absl::Duration timeout,
                           const std::vector<int>& waiting, const std::string& cause) {
  std::string ranks = waiting.empty() ? "none" : absl::StrJoin(waiting, ", ");
  return absl::DeadlineExceededError(absl::StrCat(
      "join rendezvous run_id=", run_id, ": generation ", attempt, " has ", waiting.size(),
      " machine", waiting.size() == 1 ? "" : "s", " (machine_rank ", ranks,
      "), fewer than min_machines ", options.min_machines,
      cause.empty() ? ", and no more joined within " : ", and no replacement joined within ",
      "rdzv_timeout ", absl::FormatDuration(timeout),
      cause.empty() ? "" : absl::StrCat("; root cause: ", cause)));
}

}  // namespace accel::rendezvous
