// rdzv_intruder: a third party on the network that knows a job's rendezvous endpoint but not its
// token. It tries everything a stranger should not be able to do, with no token and with a
// guessed one, and prints one line per try:
//   REFUSED <what> <code>: <message>     the server turned it away for want of the token
//   ALLOWED <what> [<code>: <message>]   it got past authentication (answered or refused later)
// Tries: read and write the job's store namespace, join as a machine, report a failure (exit
// code 42) for a machine. Flags (--name=value): endpoint (host:port), run_id (the namespace to
// try; the default multi-machine run id is guessable), machine_rank (claimed, default 1),
// deadline_ms (each call's deadline, default 3000).
// Exit: 0 when every try was refused, 1 when any got through, 2 on bad flags.
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/time/time.h"
#include "rendezvous/grpc/rendezvous_client.h"
#include "rendezvous/grpc/store_client.h"
#include "rendezvous/join/types.h"

namespace {

using accel::rendezvous::ClientOptions;
using accel::rendezvous::ConnectStore;
using accel::rendezvous::JoinRequest;
using accel::rendezvous::NewGrpcRendezvousClient;
using accel::rendezvous::RootCause;
using accel::rendezvous::StoreClientOptions;
using accel::rendezvous::StoreNamespace;

constexpr char kUsage[] =
    "usage: rdzv_intruder --endpoint=H:P --run_id=R [--machine_rank=M] [--deadline_ms=MS]\n";

// Returns true when `status` is an authentication refusal.
bool Refused(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnauthenticated ||
         status.code() == absl::StatusCode::kPermissionDenied;
}

// Prints the outcome of one try; returns whether it was refused.
bool Report(const std::string& what, const absl::Status& status) {
  const bool refused = Refused(status);
  std::printf("%s %s %s: %s\n", refused ? "REFUSED" : "ALLOWED", what.c_str(),
              absl::StatusCodeToString(status.code()).c_str(),
              std::string(status.message()).c_str());
  std::fflush(stdout);
  return refused;
}

// Tries the store, a join and a failure report with `token`; returns whether all were refused.
bool TryAll(const std::string& endpoint, const std::string& run_id, int machine_rank,
            absl::Duration deadline, const std::string& token, const std::string& label) {
  bool all_refused = true;
  StoreClientOptions store_options;
  store_options.rpc_deadline = deadline;
  store_options.connect_timeout = deadline;
  auto store = ConnectStore(endpoint, token, StoreNamespace(run_id, 0), store_options);
  if (store.ok()) {
    all_refused &=
        Report(label + " store-get", (*store)->Get("pg0/rank_0", absl::ZeroDuration()).status());
    all_refused &= Report(label + " store-set", (*store)->Set("intruder", "was here"));
  } else {
    all_refused &= Report(label + " store-connect", store.status());
  }
  ClientOptions options;
  options.endpoint = endpoint;
  options.token = token;
  options.run_id = run_id;
  options.machine_rank = machine_rank;
  options.hostname = "intruder";
  options.rpc_deadline = deadline;
  auto client = NewGrpcRendezvousClient(options);
  if (!client.ok()) return Report(label + " connect", client.status()) && all_refused;
  JoinRequest join;
  join.run_id = run_id;
  join.machine_rank = machine_rank;
  join.num_machines = 2;  // the fault suite's job: 2 machines × 2 processes
  join.num_processes = 4;
  join.local_processes = 2;
  join.hostname = "intruder";
  all_refused &= Report(label + " join", (*client)->Join(join, absl::Now() + deadline).status());
  RootCause cause;
  cause.machine_rank = machine_rank;
  cause.rank = 3;
  cause.exit_code = 42;
  cause.message = "forged by rdzv_intruder";
  all_refused &= Report(label + " report-failure", (*client)->ReportFailure(0, cause));
  return all_refused;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) {
      std::fprintf(stderr, "%s", kUsage);
      return 2;
    }
    flags[arg.substr(2, eq - 2)] = arg.substr(eq + 1);
  }
  int machine_rank = 1;
  int deadline_ms = 3000;
  if (flags["endpoint"].empty() || flags["run_id"].empty() ||
      (flags.count("machine_rank") != 0 &&
       !absl::SimpleAtoi(flags["machine_rank"], &machine_rank)) ||
      (flags.count("deadline_ms") != 0 &&
       (!absl::SimpleAtoi(flags["deadline_ms"], &deadline_ms) || deadline_ms <= 0))) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  const absl::Duration deadline = absl::Milliseconds(deadline_ms);
  bool all_refused =
      TryAll(flags["endpoint"], flags["run_id"], machine_rank, deadline, "", "no-token");
  all_refused &= TryAll(flags["endpoint"], flags["run_id"], machine_rank, deadline,
                        "0123456789abcdef", "guessed-token");
  return all_refused ? 0 : 1;
}
