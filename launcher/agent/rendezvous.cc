#include "launcher/agent/rendezvous.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/defaults.h"
#include "common/exit_codes.h"
#include "common/logging.h"
#include "common/net.h"
#include "common/seconds.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"
#include "common/version.h"
#include "launcher/agent/progress_exchange.h"
#include "launcher/agent/server_reach.h"
#include "launcher/process/os_util.h"
#include "launcher/process/subprocess.h"
#include "rendezvous/grpc/store_client.h"
#include "rendezvous/grpc/token.h"
#include "rendezvous/grpc/transport.h"
#include "rendezvous/join/result.h"

namespace accel::launcher {
namespace {

// Blocks until `fd` is readable or a signal arrives on `signals`; a signal ends the launcher
// (nothing has been spawned while the agent waits here, and a gRPC call cannot be cancelled).
void WaitOrExitOnSignal(int fd, const SignalFd& signals, const char* what) {
  for (;;) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {signals.fd(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      continue;
    }
    if (fds[1].revents != 0) {
      if (const int sig = signals.Read(); sig != 0) {
        // Notice flushes before it returns: _Exit loses nothing.
        Notice(absl::StrCat("interrupted by signal ", sig, " while ", what));
        std::_Exit(ExitCodeForSignal(sig));
      }
    }
    if (fds[0].revents != 0) {
      return;
    }
  }
}

// Returns where machine 0's server listens: main_process_ip when it is this machine's address,
// else every interface (a NAT'd or cloud address), said out loud.
std::string ServerBindAddress(const Config& config, int port) {
  absl::StatusOr<std::string> local = LocalAddressFor(config.main_process_ip);
  if (local.ok()) {
    return rendezvous::HostPort(*local, port);
  }
  Notice(absl::StrCat("rendezvous server: listening on 0.0.0.0:", port,
                      ", every interface of this machine, because main_process_ip ",
                      local.status().message()));
  return absl::StrCat("0.0.0.0:", port);
}

}  // namespace

rendezvous::JoinRequest MakeJoinRequest(const Config& config, const LaunchPlan& plan,
                                        const std::string& host) {
  rendezvous::JoinRequest request;
  request.run_id = plan.run_id;
  request.machine_rank = plan.machine_rank;
  request.num_machines = plan.num_machines;
  request.num_processes = plan.world_size;  // after the fewer-GPUs fallback, as the server
  request.local_processes = plan.nproc_per_machine;
  request.hostname = host;
  if (!config.local_addr.empty()) {
    request.addresses.push_back(config.local_addr);
  }
  request.config_fingerprint = {
      {"mixed_precision", ToString(plan.precision)},
      {"gradient_accumulation_steps", absl::StrCat(plan.gradient_accumulation_steps)},
      {"max_restarts", absl::StrCat(plan.max_restarts)},
      {"backend", plan.backend},
      // Every machine must watch for hangs alike: one that publishes nothing looks idle.
      {"hang_timeout", absl::StrCat(plan.hang_timeout_s)},
  };
  if (plan.elastic) {  // only then: a fixed job's fingerprint is what it was
    request.config_fingerprint["elastic"] =
        absl::StrCat("min_machines ", plan.min_machines, ", rdzv_last_call ", plan.rdzv_last_call_s,
                     plan.in_place ? ", in place" : "");
  }
  request.accel_version = kVersion;
  request.device_summary = plan.use_cpu ? "cpu" : absl::StrCat(plan.nproc_per_machine, "x cuda");
  return request;
}

absl::StatusOr<std::unique_ptr<AgentRendezvous>> AgentRendezvous::Create(const Config& config,
                                                                         const LaunchPlan& plan,
                                                                         const std::string& host,
                                                                         const std::string& token,
                                                                         bool dry_run) {
  if (plan.single_process) {
    return nullptr;
  }
  const bool single_machine = plan.num_machines == 1;
  const int port =
      config.main_process_port > 0 ? config.main_process_port : defaults::kMainProcessPort;

  if (!single_machine && plan.machine_rank == 0) {
    // Said plainly here rather than in gRPC's own log lines when the server cannot bind.
    if (absl::Status free = CheckPortFree("0.0.0.0", port); !free.ok()) {
      return Annotate(free, absl::StrCat("start rendezvous server on main_process_port ", port));
    }
  }
  if (!single_machine && !dry_run) {
    // A name that does not resolve, or an address with no host behind it, is said now, not
    // after rdzv_timeout.
    if (absl::Status reach = CheckServerReachable(config.main_process_ip, kReachCheckBudget);
        !reach.ok()) {
      return reach;
    }
  }
  const absl::Duration rdzv_timeout = absl::FromChrono(FromSeconds(config.rdzv_timeout_s));
  // A one-machine job's rendezvous is a Unix socket in a private directory: nothing on the
  // network. Every other job's is TCP on machine 0, secured as rendezvous/grpc/transport.h says.
  std::string endpoint = single_machine ? "unix:<a private directory>/rdzv.sock"
                                        : rendezvous::HostPort(config.main_process_ip, port);
  std::unique_ptr<rendezvous::RendezvousServer> server;
  if (!dry_run && (single_machine || plan.machine_rank == 0)) {
    rendezvous::ServerOptions options;
    options.bind_address = single_machine ? "unix:" : ServerBindAddress(config, port);
    options.advertise_host = single_machine ? "127.0.0.1" : config.main_process_ip;
    options.num_machines = plan.num_machines;
    options.num_processes = plan.world_size;
    options.run_id = plan.run_id;
    options.token = token;
    options.tls_cert_path = config.tls_cert_file;
    options.tls_key_path = config.tls_key_file;
    options.rdzv_timeout = rdzv_timeout;
    options.strict = config.strict;
    options.elastic.enabled = plan.elastic;
    options.elastic.min_machines = plan.min_machines;
    options.elastic.last_call = absl::FromChrono(FromSeconds(plan.rdzv_last_call_s));
    options.elastic.max_restarts = plan.max_restarts;
    auto started = rendezvous::RendezvousServer::Start(options);
    if (!started.ok()) {
      return Annotate(started.status(),
                      absl::StrCat("start rendezvous server on ", options.bind_address));
    }
    server = *std::move(started);
    if (single_machine) endpoint = server->endpoint();
  }

  rendezvous::JoinRequest request = MakeJoinRequest(config, plan, host);
  const std::string tls_ca = single_machine ? std::string() : config.tls_ca_file;
  if (dry_run) {
    return std::make_unique<AgentRendezvous>(nullptr, nullptr, std::move(request), endpoint, token,
                                             rdzv_timeout, tls_ca);
  }
  rendezvous::ClientOptions client_options;
  client_options.endpoint = endpoint;
  client_options.token = token;
  client_options.tls_ca_path = tls_ca;
  client_options.machine_rank = plan.machine_rank;
  client_options.run_id = plan.run_id;
  client_options.hostname = host;
  if (server != nullptr) {
    // The server runs in this process: starved, both are; it is never "unreachable" from here
    // (the other machines judge it).
    client_options.liveness.silent_lost = absl::InfiniteDuration();
  }
  auto client = rendezvous::NewGrpcRendezvousClient(client_options);
  if (!client.ok()) {
    return Annotate(client.status(), "create rendezvous client");
  }
  return std::make_unique<AgentRendezvous>(*std::move(client), std::move(server),
                                           std::move(request), endpoint, token, rdzv_timeout,
                                           tls_ca);
}

AgentRendezvous::AgentRendezvous(std::unique_ptr<rendezvous::RendezvousClient> client,
                                 std::unique_ptr<rendezvous::RendezvousServer> server,
                                 rendezvous::JoinRequest request, std::string endpoint,
                                 std::string token, absl::Duration rdzv_timeout,
                                 std::string tls_ca_path)
    : server_(std::move(server)),
      client_(std::move(client)),
      request_(std::move(request)),
      endpoint_(std::move(endpoint)),
      token_(std::move(token)),
      rdzv_timeout_(rdzv_timeout),
      tls_ca_path_(std::move(tls_ca_path)) {}

std::string AgentRendezvous::transport() const {
  return rendezvous::TransportName(rendezvous::ClientTransport(
      endpoint_, rendezvous::TransportSecurity{token_, tls_ca_path_, "", ""}));
}

AgentRendezvous::~AgentRendezvous() {
  StopWatch();
  client_.reset();
  if (server_ != nullptr) {
    server_->Shutdown();
  }
}

absl::StatusOr<RendezvousResult> AgentRendezvous::Join(const SignalFd& signals,
                                                       AbortChannel& abort) {
  StopWatch();  // no event of the previous attempt arrives after this
  abort.Reset();
  {
    absl::MutexLock lock(&mu_);
    change_seen_ = event_.has_value() ? event_time_ : absl::Now();
    event_.reset();
  }
  const absl::Time deadline = absl::Now() + rdzv_timeout_ + absl::FromChrono(defaults::kJoinGrace);
  UniqueFd done(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  absl::StatusOr<rendezvous::JoinResult> joined = absl::UnknownError("join did not run");
  std::thread joiner([&] {
    joined = client_->Join(request_, deadline);
    const std::uint64_t one = 1;
    (void)!::write(done.get(), &one, sizeof(one));
  });
  WaitOrExitOnSignal(done.get(), signals, "waiting for the rendezvous");
  joiner.join();
  if (!joined.ok()) {
    const std::string context = absl::StrCat("join rendezvous at ", endpoint_);
    if (absl::StartsWith(joined.status().message(), context)) return joined.status();
    return Annotate(joined.status(), context);  // the real client names it already
  }
  for (const std::string& warning : joined->warnings) {
    Notice(absl::StrCat("rendezvous warning: ", warning));
  }
  RendezvousResult result;
  result.base_rank = joined->base_rank;
  result.world_size = joined->world_size;
  result.master_addr = joined->master_addr;
  result.master_port = joined->master_port;
  result.store_endpoint = joined->store_endpoint;
  result.tls_ca_file = tls_ca_path_;
  if (request_.num_machines > 1) {
    result.local_addr = joined->self.address;
  }
  result.run_id = joined->run_id;
  result.token = token_;
  result.attempt = static_cast<int>(joined->attempt);
  result.restart_count = joined->restart_count;
  result.group_rank = joined->group_rank;
  result.group_world_size = joined->group_world_size;
  result.membership = joined->membership;
  result.continues = joined->continues;
  auto status = client_->Watch(
      joined->attempt, [this, &abort](const rendezvous::Event& event) { OnEvent(event, abort); });
  if (!status.ok()) {
    return Annotate(status, "watch rendezvous");
  }
  watching_ = true;
  return result;
}

void AgentRendezvous::StopWatch() {
  if (!watching_ || client_ == nullptr) {
    return;
  }
  client_->StopWatch();
  watching_ = false;
}

void AgentRendezvous::OnEvent(const rendezvous::Event& received, AbortChannel& abort) {
  rendezvous::Event event = received;
  if (event.kind == rendezvous::Event::Kind::kServerLost) {
    event.root_cause = ServerLostCause(event);
  }
  {
    absl::MutexLock lock(&mu_);
    event_ = event;
    event_time_ = absl::Now();
  }
  switch (event.kind) {
    case rendezvous::Event::Kind::kRestart:
      abort.Abort(absl::StrCat("restart (attempt ", event.attempt, ")"));
      break;
    case rendezvous::Event::Kind::kDone:
      abort.Abort("done");
      break;
    case rendezvous::Event::Kind::kServerLost:
      abort.Abort(event.root_cause.message);
      break;
    case rendezvous::Event::Kind::kAbort:
      abort.Abort(absl::StrCat("aborted by machine ", event.root_cause.machine_rank, " rank ",
                               event.root_cause.rank));
      break;
  }
}

void AgentRendezvous::ReportFailure(std::int64_t attempt, const WorkerFailure& failure,
                                    bool restart) {
  const rendezvous::RootCause cause = ToRootCause(failure);
  const absl::Status status =
      restart ? client_->RequestRestart(attempt, cause) : client_->ReportFailure(attempt, cause);
  if (!status.ok()) {
    Notice(absl::StrCat("report failure to rendezvous: ", status.message()));
  }
}

void AgentRendezvous::ReportHang(std::int64_t attempt, const WorkerFailure& failure) {
  if (const absl::Status status = client_->ReportHang(attempt, ToRootCause(failure));
      !status.ok()) {
    Notice(absl::StrCat("report hang to rendezvous: ", status.message()));
  }
}

void AgentRendezvous::ReportInterrupted(std::int64_t attempt, int signal,
                                        const std::string& sender) {
  rendezvous::RootCause cause;
  cause.machine_rank = request_.machine_rank;
  cause.hostname = request_.hostname;
  cause.signal = signal;
  cause.message = absl::StrCat("machine ", request_.machine_rank, ": launcher ",
                               DescribeLauncherSignal(signal, sender));
  // Not held for a server that has gone: every machine may have been signalled at once.
  (void)client_->ReportStopping(attempt, cause);
}

void AgentRendezvous::ReportSpawnFailure(std::int64_t attempt, const absl::Status& error) {
  rendezvous::RootCause cause;
  cause.machine_rank = request_.machine_rank;
  cause.hostname = request_.hostname;
  cause.exit_code = kExitWorkerFailed;
  cause.message = absl::StrCat("machine ", request_.machine_rank, ": ", error.message());
  (void)client_->ReportFailure(attempt, cause);
}

int AgentRendezvous::FinishDone(std::int64_t attempt, const SignalFd& signals,
                                AbortChannel& abort) {
  if (const absl::Status status = client_->ReportDone(attempt); !status.ok()) {
    Notice(absl::StrCat("report done to rendezvous: ", status.message()));
    return kExitRendezvous;
  }
  WaitOrExitOnSignal(abort.fd(), signals, "waiting for the other machines to finish");
  absl::MutexLock lock(&mu_);
  if (!event_.has_value() || event_->kind == rendezvous::Event::Kind::kDone) {
    return kExitOk;
  }
  const bool lost = event_->kind == rendezvous::Event::Kind::kServerLost;
  NoticeBlock(FormatFailureReport(
      {FromRootCause(event_->root_cause, event_time_)},
      absl::StrCat(kLogPrefix,
                   lost ? "local workers finished, but the rendezvous host was lost:"
                        : "local workers finished, but the job was aborted, root cause:")));
  return lost ? kExitRendezvous : kExitWorkerFailed;
}

std::optional<rendezvous::Event> AgentRendezvous::AwaitEvent(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto arrived = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return event_.has_value(); };
  mu_.AwaitWithTimeout(absl::Condition(&arrived), timeout);
  return event_;
}

std::unique_ptr<JobProgress> AgentRendezvous::OpenJobProgress(const RendezvousResult& joined,
                                                              absl::Duration hang_timeout) const {
  rendezvous::StoreClientOptions options;
  options.tls_ca_path = tls_ca_path_;
  options.rpc_deadline = absl::FromChrono(defaults::kProgressStoreDeadline);
  options.connect_timeout = options.rpc_deadline;
  options.wait_for_ready = false;  // a dead server must not hold up the teardown
  auto store = rendezvous::ConnectStore(joined.store_endpoint, token_,
                                        rendezvous::StoreNamespace(request_.run_id, joined.attempt),
                                        options);
  if (!store.ok()) {
    Notice(absl::StrCat("hang detection sees this machine only: ", store.status().message()));
    return nullptr;
  }
  ExchangeOptions exchange;
  // The generation's dense machine indices (machine_rank and num_machines when fixed).
  exchange.machine_rank = joined.group_rank;
  exchange.num_machines = joined.group_world_size;
  exchange.hang_timeout = hang_timeout;
  return std::make_unique<ProgressExchange>(*std::move(store), exchange);
}

absl::Time AgentRendezvous::change_seen() const {
  absl::MutexLock lock(&mu_);
  return change_seen_;
}

bool AgentRendezvous::restart_requested() const {
  absl::MutexLock lock(&mu_);
  return event_.has_value() && event_->kind == rendezvous::Event::Kind::kRestart;
}

bool AgentRendezvous::evicted() const {
  absl::MutexLock lock(&mu_);
  return event_.has_value() && event_->kind == rendezvous::Event::Kind::kAbort && event_->evicted;
}

WorkerFailure AgentRendezvous::RemoteRootCause() const {
  absl::MutexLock lock(&mu_);
  if (!event_.has_value()) {
    return WorkerFailure{};
  }
  return FromRootCause(event_->root_cause, event_time_);
}

int AgentRendezvous::RemoteExitCode() const {
  absl::MutexLock lock(&mu_);
  if (!event_.has_value()) {
    return kExitWorkerFailed;
  }
  if (event_->kind == rendezvous::Event::Kind::kServerLost) {
    return kExitRendezvous;
  }
  return kExitWorkerFailed;
}

}  // namespace accel::launcher
