#include "rendezvous/join/checks.h"

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/absl_view.h"

namespace accel::rendezvous {
namespace {

constexpr std::size_t kMaxShortField = 256;  // run id, hostname, address, versions
constexpr int kMaxListEntries = 256;         // addresses, fingerprint and version entries

std::string Prefix(const std::string& run_id) {
  return absl::StrCat("join rendezvous run_id=", run_id, ": ");
}

// Returns the keys whose values differ (or exist on one side only), sorted.
std::vector<std::string> DifferingKeys(const google::protobuf::Map<std::string, std::string>& a,
                                       const google::protobuf::Map<std::string, std::string>& b) {
  std::set<std::string> keys;
  for (const auto& [key, value] : a) {
    auto it = b.find(key);
    if (it == b.end() || it->second != value) keys.insert(key);
  }
  for (const auto& [key, value] : b) {
    if (!a.contains(key)) keys.insert(key);
  }
  return {keys.begin(), keys.end()};
}

}  // namespace

bool SecretsMatch(std::string_view expected, std::string_view given) {
  // Walks the whole expected secret whatever `given` holds, so timing reveals only lengths.
  unsigned char diff = expected.size() == given.size() ? 0 : 1;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= static_cast<unsigned char>(static_cast<unsigned char>(expected[i]) ^ g);
  }
  return diff == 0;
}

std::string DescribeMachine(const JoinedMachine& machine) {
  return absl::StrCat("machine_rank ", machine.request.machine_rank(), " (host ",
                      machine.request.hostname().empty() ? "?" : machine.request.hostname(),
                      ", address ", machine.address.empty() ? "?" : machine.address, ")");
}

std::string PeerHost(std::string_view peer) {
  std::string_view rest = peer;
  if (rest.substr(0, 5) == "ipv4:") {
    rest.remove_prefix(5);
    return std::string(rest.substr(0, rest.rfind(':')));
  }
  if (rest.substr(0, 5) == "ipv6:") {
    rest.remove_prefix(5);
    if (rest.substr(0, 3) == "%5B") {
      rest.remove_prefix(3);
      return std::string(rest.substr(0, rest.find("%5D")));
    }
    if (rest.substr(0, 1) == "[") {
      rest.remove_prefix(1);
      return std::string(rest.substr(0, rest.find(']')));
    }
  }
  return std::string(peer);
}

absl::Status CheckRequestShape(const v1::JoinRequest& request, const ServerOptions& options) {
  const std::string prefix = Prefix(options.run_id);
  if (request.machine_rank() < 0 || request.machine_rank() >= options.num_machines) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "machine_rank ", request.machine_rank(),
                                                   " is outside [0, ", options.num_machines, ")"));
  }
  if (request.local_processes() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "machine_rank ", request.machine_rank(),
                     " has local_processes=", request.local_processes(), "; need >= 1"));
  }
  bool too_long = request.run_id().size() > kMaxShortField ||
                  request.hostname().size() > kMaxShortField ||
                  request.accel_version().size() > kMaxShortField ||
                  request.agent_nonce().size() > kMaxShortField ||
                  request.device_summary().size() > 4 * kMaxShortField;
  for (const std::string& address : request.addresses()) {
    too_long = too_long || address.size() > kMaxShortField;
  }
  if (too_long || request.addresses_size() > kMaxListEntries ||
      request.config_fingerprint_size() > kMaxListEntries ||
      request.versions_size() > kMaxListEntries) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "machine_rank ", request.machine_rank(),
                                                   ": a field of the join request is too long"));
  }
  return absl::OkStatus();
}

absl::Status CheckAgainstServer(const JoinedMachine& machine, const ServerOptions& options,
                                std::string_view reference) {
  const v1::JoinRequest& r = machine.request;
  const std::string prefix = Prefix(options.run_id);
  // The counts first: a run id derived from them differs too, and the counts say why.
  if (r.num_machines() != options.num_machines) {
    return absl::FailedPreconditionError(absl::StrCat(
        prefix, "num_machines mismatch: ", DescribeMachine(machine), " has num_machines=",
        r.num_machines(), " but ", Av(reference), " has num_machines=", options.num_machines));
  }
  if (options.num_processes > 0 && r.num_processes() != options.num_processes) {
    return absl::FailedPreconditionError(absl::StrCat(
        prefix, "num_processes mismatch: ", DescribeMachine(machine), " has num_processes=",
        r.num_processes(), " but ", Av(reference), " has num_processes=", options.num_processes));
  }
  if (!r.run_id().empty() && r.run_id() != options.run_id) {
    return absl::FailedPreconditionError(
        absl::StrCat(prefix, "run id mismatch: ", DescribeMachine(machine), " has run_id \"",
                     r.run_id(), "\" but ", Av(reference), " has run_id \"", options.run_id, "\""));
  }
  return absl::OkStatus();
}

absl::Status CheckAgainstPeer(const JoinedMachine& machine, const JoinedMachine& peer,
                              const std::string& run_id, bool strict,
                              std::vector<std::string>& warnings) {
  const std::string prefix = Prefix(run_id);
  std::vector<std::string> config =
      DifferingKeys(machine.request.config_fingerprint(), peer.request.config_fingerprint());
  if (!config.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(prefix, "config fingerprint mismatch: ", DescribeMachine(machine), " and ",
                     DescribeMachine(peer), " differ in ", absl::StrJoin(config, ", ")));
  }
  std::vector<std::string> versions =
      DifferingKeys(machine.request.versions(), peer.request.versions());
  if (machine.request.accel_version() != peer.request.accel_version()) {
    versions.insert(versions.begin(), "accel-launch");
  }
  if (versions.empty()) return absl::OkStatus();
  std::vector<std::string> details;
  for (const std::string& key : versions) {
    auto version_of = [&key](const v1::JoinRequest& r) -> std::string {
      if (key == "accel-launch") return r.accel_version();
      auto it = r.versions().find(key);
      return it == r.versions().end() ? "none" : it->second;
    };
    details.push_back(
        absl::StrCat(key, " ", version_of(machine.request), " vs ", version_of(peer.request)));
  }
  std::string message =
      absl::StrCat("version mismatch: ", DescribeMachine(machine), " and ", DescribeMachine(peer),
                   " differ in ", absl::StrJoin(details, ", "));
  if (strict) return absl::FailedPreconditionError(absl::StrCat(prefix, message));
  warnings.push_back(std::move(message));
  return absl::OkStatus();
}

absl::Status DuplicateRankError(const JoinedMachine& incoming, const JoinedMachine& existing,
                                const std::string& run_id) {
  return absl::FailedPreconditionError(
      absl::StrCat(Prefix(run_id), "duplicate machine_rank ", incoming.request.machine_rank(), ": ",
                   DescribeMachine(incoming), " and ", DescribeMachine(existing),
                   " both joined; give each machine its own machine_rank"));
}

std::vector<int> AssignBaseRanks(const std::vector<int>& local_processes) {
  std::vector<int> base;
  base.reserve(local_processes.size());
  int next = 0;
  for (int count : local_processes) {
    base.push_back(next);
    next += count;
  }
  return base;
}

absl::Status TimeoutError(const std::string& run_id, std::int64_t attempt, absl::Duration timeout,
                          int num_machines, const std::vector<const JoinedMachine*>& arrived,
                          const std::vector<std::string>& refused) {
  std::vector<bool> present(num_machines, false);
  std::vector<std::string> arrived_text;
  for (const JoinedMachine* machine : arrived) {
    present[machine->request.machine_rank()] = true;
    arrived_text.push_back(DescribeMachine(*machine));
  }
  std::vector<int> missing;
  for (int rank = 0; rank < num_machines; ++rank) {
    if (!present[rank]) missing.push_back(rank);
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "join rendezvous run_id=", run_id, " attempt=", attempt, ": timed out after ",
      absl::FormatDuration(timeout), " with ", arrived.size(), " of ", num_machines,
      " machines joined; arrived: ", absl::StrJoin(arrived_text, ", "), "; missing machine_rank ",
      absl::StrJoin(missing, ", "),
      refused.empty() ? "" : absl::StrCat("; refused: ", absl::StrJoin(refused, "; "))));
}

absl::Status RefusedPeerError(const JoinedMachine& refused, const absl::Status& why,
                              const std::string& run_id) {
  absl::string_view reason = why.message();
  const std::string prefix = Prefix(run_id);
  if (absl::StartsWith(reason, prefix)) reason.remove_prefix(prefix.size());
  return absl::Status(why.code(),
                      absl::StrCat(prefix, DescribeMachine(refused),
                                   " was refused, so this attempt cannot complete: ", reason));
}

}  // namespace accel::rendezvous
