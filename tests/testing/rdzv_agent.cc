// rdzv_agent: a stand-in for one machine's agent in the rendezvous mp/netns tests.
//
// Joins, optionally watches and reports, and prints one line per outcome on stdout:
//   JOINED attempt=A base=B world=W master=H:P store=E ns=N machines=M self=R@ADDRESS
//   JOIN_ERROR code=CODE msg=MESSAGE
//   EVENT kind=abort|restart|done|server_lost machine=M msg=MESSAGE
//   KV_OK peers=N
// Flags (--name=value): endpoint, token, run_id, machine_rank, num_machines, num_processes,
// local_processes, hostname, address, fingerprint (k=v), delay_ms (before joining),
// timeout_ms (join deadline), watch_ms (0 = no watch), report (none|done|failure), kv (0|1),
// want_machines (1 = the answer lists every machine, the default here; 0 = own entry only),
// serve (host:port: also run the server there, as machine 0's launcher does, print
// "SERVING port=P" and join through 127.0.0.1:P), rdzv_timeout_ms (the server's).
// Exit: kExitOk, kExitRendezvous (join failed; common/exit_codes.h), or one of its own codes
// below.
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/exit_codes.h"
#include "rendezvous/grpc/rendezvous_client.h"
#include "rendezvous/grpc/server.h"
#include "rendezvous/grpc/store_client.h"

namespace {

using accel::kExitOk;
using accel::kExitRendezvous;
using accel::rendezvous::ClientOptions;
using accel::rendezvous::Event;
using accel::rendezvous::JoinRequest;
using accel::rendezvous::JoinResult;
using accel::rendezvous::RendezvousClient;
using accel::rendezvous::RendezvousServer;
using accel::rendezvous::RootCause;
using accel::rendezvous::ServerOptions;
using Flags = std::map<std::string, std::string>;

constexpr int kExitNoEvent = 4;     // no event before watch_ms
constexpr int kExitAborted = 5;     // an abort or server-lost event
constexpr int kExitStoreError = 6;  // the KV exchange failed

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) continue;
    const std::size_t eq = arg.find('=');
    if (eq == std::string::npos) {
      flags[arg.substr(2)] = "1";
    } else {
      flags[arg.substr(2, eq - 2)] = arg.substr(eq + 1);
    }
  }
  return flags;
}

int IntFlag(const Flags& flags, const std::string& name, int def) {
  auto it = flags.find(name);
  int value = def;
  if (it != flags.end() && !absl::SimpleAtoi(it->second, &value)) value = def;
  return value;
}

std::string Flag(const Flags& flags, const std::string& name, const std::string& def) {
  auto it = flags.find(name);
  return it == flags.end() ? def : it->second;
}

void Print(const std::string& line) {
  std::fprintf(stdout, "%s\n", line.c_str());
  std::fflush(stdout);
}

const char* KindName(Event::Kind kind) {
  switch (kind) {
    case Event::Kind::kAbort:
      return "abort";
    case Event::Kind::kRestart:
      return "restart";
    case Event::Kind::kDone:
      return "done";
    case Event::Kind::kServerLost:
      return "server_lost";
  }
  return "?";
}

// Every machine sets its key and waits for all others: the workers' NCCL-id style exchange.
int ExchangeThroughStore(const accel::rendezvous::JoinResult& joined, const std::string& token,
                         int machine_rank, int num_machines) {
  auto store =
      accel::rendezvous::ConnectStore(joined.store_endpoint, token, joined.store_namespace);
  if (!store.ok()) {
    Print(absl::StrCat("KV_ERROR ", store.status().ToString()));
    return kExitStoreError;
  }
  absl::Status status = (*store)->Set(absl::StrCat("machine", machine_rank), "up");
  std::vector<std::string> keys;
  for (int m = 0; m < num_machines; ++m) keys.push_back(absl::StrCat("machine", m));
  if (status.ok()) status = (*store)->Wait(keys, absl::Seconds(20));
  absl::StatusOr<std::int64_t> count = (*store)->Add("arrived", 1);
  if (!status.ok() || !count.ok()) {
    Print(absl::StrCat("KV_ERROR ", status.ok() ? count.status().ToString() : status.ToString()));
    return kExitStoreError;
  }
  Print(absl::StrCat("KV_OK peers=", keys.size()));
  return kExitOk;
}

// The client side of one machine, from the flags (the endpoint may be replaced by --serve).
ClientOptions ClientOptionsFrom(const Flags& flags) {
  ClientOptions options;
  options.endpoint = Flag(flags, "endpoint", "");
  options.token = Flag(flags, "token", "");
  options.run_id = Flag(flags, "run_id", "run");
  options.machine_rank = IntFlag(flags, "machine_rank", 0);
  options.hostname = Flag(flags, "hostname", absl::StrCat("host", options.machine_rank));
  return options;
}

JoinRequest JoinRequestFrom(const Flags& flags, const ClientOptions& options) {
  JoinRequest request;
  request.run_id = options.run_id;
  request.machine_rank = options.machine_rank;
  request.num_machines = IntFlag(flags, "num_machines", 1);
  request.num_processes = IntFlag(flags, "num_processes", 0);
  request.local_processes = IntFlag(flags, "local_processes", 1);
  request.hostname = options.hostname;
  request.want_machines = IntFlag(flags, "want_machines", 1) != 0;
  if (flags.count("address")) request.addresses.push_back(Flag(flags, "address", ""));
  const std::string fingerprint = Flag(flags, "fingerprint", "mixed_precision=no");
  const std::size_t eq = fingerprint.find('=');
  request.config_fingerprint[fingerprint.substr(0, eq)] =
      eq == std::string::npos ? "" : fingerprint.substr(eq + 1);
  request.accel_version = "test";
  return request;
}

// Starts the server at --serve, as machine 0's launcher does, and points `options` at it through
// 127.0.0.1. Prints SERVING (or SERVE_ERROR and returns null).
std::unique_ptr<RendezvousServer> Serve(const Flags& flags, const JoinRequest& request,
                                        ClientOptions& options) {
  ServerOptions server_options;
  server_options.bind_address = Flag(flags, "serve", "");
  server_options.num_machines = request.num_machines;
  server_options.num_processes = request.num_processes;
  server_options.run_id = options.run_id;
  server_options.token = options.token;
  server_options.rdzv_timeout = absl::Milliseconds(IntFlag(flags, "rdzv_timeout_ms", 30000));
  auto started = RendezvousServer::Start(server_options);
  if (!started.ok()) {
    Print(absl::StrCat("SERVE_ERROR ", started.status().ToString()));
    return nullptr;
  }
  std::unique_ptr<RendezvousServer> server = *std::move(started);
  options.endpoint = absl::StrCat("127.0.0.1:", server->port());
  Print(absl::StrCat("SERVING port=", server->port()));
  return server;
}

void PrintJoinError(const absl::Status& status) {
  Print(absl::StrCat("JOIN_ERROR code=", absl::StatusCodeToString(status.code()),
                     " msg=", status.message()));
}

void PrintJoined(const JoinResult& joined) {
  Print(absl::StrCat("JOINED attempt=", joined.attempt, " base=", joined.base_rank,
                     " world=", joined.world_size, " master=", joined.master_addr, ":",
                     joined.master_port, " store=", joined.store_endpoint,
                     " ns=", joined.store_namespace, " machines=", joined.machines.size(),
                     " self=", joined.self.machine_rank, "@", joined.self.address));
}

// Sends what --report asks for (none, done or failure); prints REPORT_ERROR when that fails.
void Report(const std::string& report, RendezvousClient& client, const JoinRequest& request,
            const JoinResult& joined) {
  absl::Status s;
  if (report == "done") {
    s = client.ReportDone(joined.attempt);
  } else if (report == "failure") {
    RootCause cause;
    cause.machine_rank = request.machine_rank;
    cause.hostname = request.hostname;
    cause.rank = joined.base_rank;
    cause.exit_code = 7;
    cause.message = absl::StrCat("rank ", joined.base_rank, " exited with 7");
    s = client.ReportFailure(joined.attempt, cause);
  }
  if (!s.ok()) Print(absl::StrCat("REPORT_ERROR ", s.ToString()));
}

// Watches the attempt, reports, and waits up to watch_ms for the first event, which it prints.
// Returns the exit code: 0, 4 (no event) or 5 (an abort or a lost server).
int WatchAndReport(const Flags& flags, int watch_ms, RendezvousClient& client,
                   const JoinRequest& request, const JoinResult& joined) {
  absl::Notification got;
  Event event;
  absl::Status started = client.Watch(joined.attempt, [&](const Event& e) {
    event = e;
    got.Notify();
  });
  if (!started.ok()) return kExitNoEvent;
  Report(Flag(flags, "report", "none"), client, request, joined);
  if (!got.WaitForNotificationWithTimeout(absl::Milliseconds(watch_ms))) {
    Print("NO_EVENT");
    client.StopWatch();
    return kExitNoEvent;
  }
  Print(absl::StrCat("EVENT kind=", KindName(event.kind), " machine=",
                     event.root_cause.machine_rank, " msg=", event.root_cause.message));
  client.StopWatch();
  return event.kind == Event::Kind::kAbort || event.kind == Event::Kind::kServerLost ? kExitAborted
                                                                                     : kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  ClientOptions options = ClientOptionsFrom(flags);
  const JoinRequest request = JoinRequestFrom(flags, options);
  std::unique_ptr<RendezvousServer> server;
  if (flags.count("serve")) {
    server = Serve(flags, request, options);
    if (server == nullptr) return kExitRendezvous;
  }
  absl::SleepFor(absl::Milliseconds(IntFlag(flags, "delay_ms", 0)));
  auto client = accel::rendezvous::NewGrpcRendezvousClient(options);
  if (!client.ok()) {
    PrintJoinError(client.status());
    return kExitRendezvous;
  }
  auto joined = (*client)->Join(
      request, absl::Now() + absl::Milliseconds(IntFlag(flags, "timeout_ms", 30000)));
  if (!joined.ok()) {
    PrintJoinError(joined.status());
    return kExitRendezvous;
  }
  PrintJoined(*joined);
  if (IntFlag(flags, "kv", 0) != 0) {
    if (int rc = ExchangeThroughStore(*joined, options.token, request.machine_rank,
                                      request.num_machines);
        rc != kExitOk) {
      return rc;
    }
  }
  const int watch_ms = IntFlag(flags, "watch_ms", 0);
  if (watch_ms <= 0) return kExitOk;
  return WatchAndReport(flags, watch_ms, **client, request, *joined);
}
