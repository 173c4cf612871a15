#include "rendezvous/join/result.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rendezvous/join/types.h"

namespace accel::rendezvous {

std::string HostPort(const std::string& host, int port) {
  if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

absl::Status CheckWorldSize(const std::vector<const JoinedMachine*>& machines,
                            const AttemptInfo& info) {
  std::int64_t world = 0;
  for (const JoinedMachine* m : machines) world += m->request.local_processes();
  if (info.num_processes <= 0 || world == info.num_processes) return absl::OkStatus();
  std::vector<std::string> parts;
  for (const JoinedMachine* m : machines) {
    parts.push_back(absl::StrCat(DescribeMachine(*m), " runs ", m->request.local_processes()));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("join rendezvous run_id=", info.run_id,
                   ": num_processes mismatch: the machines run ", world, " processes in total (",
                   absl::StrJoin(parts, ", "), ") but num_processes=", info.num_processes));
}

absl::StatusOr<std::vector<v1::JoinResponse>> BuildJoinResponses(
    const std::vector<const JoinedMachine*>& machines, const AttemptInfo& info) {
  if (absl::Status status = CheckWorldSize(machines, info); !status.ok()) return status;
  std::vector<int> locals;
  std::int64_t world = 0;
  for (const JoinedMachine* m : machines) {
    locals.push_back(m->request.local_processes());
    world += m->request.local_processes();
  }
  const std::vector<int> base = AssignBaseRanks(locals);
  const std::string host = !info.master_host.empty() ? info.master_host
                           : machines.empty()        ? std::string()
                                                     : machines.front()->address;
  v1::JoinResponse common;
  common.set_attempt(info.attempt);
  common.set_world_size(static_cast<int>(world));
  common.set_master_addr(host);
  common.set_master_port(info.master_port);
  common.set_store_endpoint(HostPort(host, info.store_port));
  common.set_store_namespace(StoreNamespace(info.run_id, info.attempt));
  common.set_run_id(info.run_id);
  common.set_group_world_size(static_cast<int>(machines.size()));
  common.set_restart_count(static_cast<int>(info.restart_count));
  common.set_membership(info.membership);
  common.set_continues(info.continues);
  for (const std::string& warning : info.warnings) common.add_warnings(warning);
  auto entry = [&](std::size_t i) {
    v1::Machine m;
    m.set_machine_rank(machines[i]->request.machine_rank());
    m.set_hostname(machines[i]->request.hostname());
    m.set_address(machines[i]->address);
    m.set_base_rank(base[i]);
    m.set_local_processes(machines[i]->request.local_processes());
    return m;
  };
  // The list is O(machines) per response: built only when someone asked for it.
  google::protobuf::RepeatedPtrField<v1::Machine> list;
  for (std::size_t i = 0; i < machines.size(); ++i) {
    if (!machines[i]->request.want_machines()) continue;
    for (std::size_t k = 0; k < machines.size(); ++k) *list.Add() = entry(k);
    break;
  }
  std::vector<v1::JoinResponse> responses;
  responses.reserve(machines.size());
  for (std::size_t i = 0; i < machines.size(); ++i) {
    responses.push_back(common);
    responses.back().set_base_rank(base[i]);
    responses.back().set_group_rank(static_cast<int>(i));
    *responses.back().mutable_self() = entry(i);
    if (machines[i]->request.want_machines()) *responses.back().mutable_machines() = list;
  }
  return responses;
}

}  // namespace accel::rendezvous
