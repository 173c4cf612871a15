#include "rendezvous/grpc/client_convert.h"

#include "absl/strings/str_cat.h"

namespace accel::rendezvous {

v1::JoinRequest ToProto(const JoinRequest& r) {
  v1::JoinRequest p;
  p.set_run_id(r.run_id);
  p.set_machine_rank(r.machine_rank);
  p.set_num_machines(r.num_machines);
  p.set_num_processes(r.num_processes);
  p.set_local_processes(r.local_processes);
  p.set_hostname(r.hostname);
  for (const std::string& address : r.addresses) p.add_addresses(address);
  p.mutable_config_fingerprint()->insert(r.config_fingerprint.begin(), r.config_fingerprint.end());
  p.set_accel_version(r.accel_version);
  p.mutable_versions()->insert(r.versions.begin(), r.versions.end());
  p.set_device_summary(r.device_summary);
  p.set_want_machines(r.want_machines);
  return p;
}

JoinResult FromProto(const v1::JoinResponse& p) {
  JoinResult r;
  r.attempt = p.attempt();
  r.base_rank = p.base_rank();
  r.world_size = p.world_size();
  r.master_addr = p.master_addr();
  r.master_port = p.master_port();
  r.store_endpoint = p.store_endpoint();
  r.store_namespace = p.store_namespace();
  for (const v1::Machine& m : p.machines()) {
    r.machines.push_back(MachineEntry{m.machine_rank(), m.hostname(), m.address(), m.base_rank(),
                                      m.local_processes()});
  }
  r.warnings.assign(p.warnings().begin(), p.warnings().end());
  const v1::Machine& self = p.self();
  r.self = MachineEntry{self.machine_rank(), self.hostname(), self.address(), self.base_rank(),
                        self.local_processes()};
  r.run_id = p.run_id();
  r.machine_secret = p.machine_secret();
  r.group_rank = p.group_rank();
  r.group_world_size = p.group_world_size();
  r.restart_count = p.restart_count();
  r.membership = p.membership();
  r.continues = p.continues();
  return r;
}

v1::RootCause ToProto(const RootCause& c) {
  v1::RootCause p;
  p.set_machine_rank(c.machine_rank);
  p.set_hostname(c.hostname);
  p.set_rank(c.rank);
  p.set_exit_code(c.exit_code);
  p.set_signal(c.signal);
  p.set_message(c.message);
  return p;
}

RootCause FromProto(const v1::RootCause& p) {
  return RootCause{p.machine_rank(), p.hostname(), p.rank(),
                   p.exit_code(),    p.signal(),   p.message()};
}

Event FromProto(const v1::Event& p) {
  Event e;
  e.attempt = p.attempt();
  e.root_cause = FromProto(p.root_cause());
  e.evicted = p.evicted();
  switch (p.kind()) {
    case v1::Event::ABORT:
      e.kind = Event::Kind::kAbort;
      break;
    case v1::Event::RESTART:
      e.kind = Event::Kind::kRestart;
      break;
    case v1::Event::DONE:
      e.kind = Event::Kind::kDone;
      break;
    default:
      e.kind = Event::Kind::kServerLost;
      e.root_cause.message = "watch rendezvous: the server sent an event of unknown kind";
      break;
  }
  return e;
}

}  // namespace accel::rendezvous
