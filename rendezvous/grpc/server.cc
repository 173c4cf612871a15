#include "rendezvous/grpc/server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/defaults.h"
#include "common/logging.h"
#include "common/net.h"
#include "common/status_macros.h"
#include "rendezvous/grpc/auth.h"
#include "rendezvous/grpc/connection_gate.h"
#include "rendezvous/grpc/grpc_log.h"
#include "rendezvous/grpc/rendezvous_service.h"
#include "rendezvous/grpc/store_service.h"
#include "rendezvous/grpc/tcp_probe.h"
#include "rendezvous/grpc/transport.h"
#include "rendezvous/join/coordinator.h"
#include "rendezvous/join/result.h"
#include "rendezvous/store/kv_table.h"

namespace accel::rendezvous {
namespace {

// Splits "host:port" / "[v6]:port".
absl::StatusOr<std::pair<std::string, int>> SplitHostPort(const std::string& address) {
  const std::size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("start rendezvous server: bind address \"", address, "\" is not host:port"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return std::make_pair(host, port);
}

constexpr int kControl = -1;  // the prober's key for the server's own port

// Raises this process's open-file limit to its hard limit: every connection is a descriptor, and
// the launcher that serves the rendezvous also supervises machine 0's workers.
void RaiseFileLimit() {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      spdlog::debug("rendezvous server: cannot raise RLIMIT_NOFILE to {}", limit.rlim_max);
    }
  }
}

// Makes a private directory (0700) for a Unix socket: under $XDG_RUNTIME_DIR when it is set,
// else $TMPDIR or /tmp, falling back to /tmp when the path would not fit a socket address.
absl::StatusOr<std::string> MakeSocketDirectory() {
  std::string base = "/tmp";
  for (const char* name : {"XDG_RUNTIME_DIR", "TMPDIR"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && value[0] == '/' && std::string(value).size() < 60) {
      base = value;
      break;
    }
  }
  std::string dir = absl::StrCat(base, "/accel-rdzv-XXXXXX");
  if (::mkdtemp(dir.data()) == nullptr) {  // mode 0700
    return absl::ErrnoToStatus(errno, absl::StrCat("start rendezvous server: mkdtemp ", dir));
  }
  return dir;
}

bool IsWildcard(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "*";
}

absl::Status Validate(const ServerOptions& o) {
  if (o.num_machines < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("start rendezvous server: num_machines=", o.num_machines, "; need >= 1"));
  }
  if (o.num_processes < 0 || o.rdzv_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "start rendezvous server: num_processes and rdzv_timeout must be positive");
  }
  if (const std::string why = ValidateLiveness(o.liveness); !why.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("start rendezvous server: ", why));
  }
  if (o.tls_cert_path.empty() != o.tls_key_path.empty()) {
    return absl::InvalidArgumentError(
        "start rendezvous server: TLS needs both a certificate and a key path");
  }
  return absl::OkStatus();
}

class GrpcRendezvousServer final : public RendezvousServer {
 public:
  explicit GrpcRendezvousServer(const ServerOptions& options) : options_(options) {}
  ~GrpcRendezvousServer() override { Shutdown(absl::FromChrono(defaults::kServerShutdownGrace)); }

  absl::Status Init() {
    RouteGrpcLogs(/*serving=*/true);
    RaiseFileLimit();
    std::string bind = options_.bind_address;
    if (IsUnixEndpoint(bind)) {
      if (bind == "unix:") {
        absl::StatusOr<std::string> dir = MakeSocketDirectory();
        if (!dir.ok()) return dir.status();
        socket_dir_ = *dir;
        bind = absl::StrCat("unix:", socket_dir_, "/rdzv.sock");
      }
      unix_endpoint_ = bind;
      host_ = "127.0.0.1";  // MASTER_ADDR of a one-machine job
    } else {
      absl::StatusOr<std::pair<std::string, int>> host_port = SplitHostPort(bind);
      if (!host_port.ok()) return host_port.status();
      host_ = host_port->first;
      // TCP connections are accepted by the gate (connection_gate.h), which bounds how many wait
      // in their TLS handshake, and handed to gRPC with the same credentials.
      GateLimits limits;  // a connection older than the handshake timeout has authenticated
      limits.window = absl::FromChrono(defaults::kServerHandshakeTimeout) + absl::Seconds(1);
      absl::StatusOr<std::unique_ptr<ConnectionGate>> gate =
          ConnectionGate::Listen(host_, host_port->second, limits);
      if (!gate.ok()) return Annotate(gate.status(), "start rendezvous server");
      gate_ = *std::move(gate);
      port_ = gate_->port();
    }
    const TransportSecurity security{options_.token, "", options_.tls_cert_path,
                                     options_.tls_key_path};
    transport_ = ServerTransport(bind, security);
    absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
        ServerCredentials(bind, security);
    if (!credentials.ok()) return Annotate(credentials.status(), "start rendezvous server");
    table_ = std::make_unique<KvTable>(options_.limits);
    JoinCoordinator::Hooks hooks;
    hooks.advertise_host = !options_.advertise_host.empty() ? options_.advertise_host
                           : IsWildcard(host_)              ? std::string()
                                                            : host_;
    hooks.store_port = [this] { return port_; };
    const std::string master_host = IsWildcard(host_) ? std::string() : host_;
    hooks.pick_master_port = [master_host] { return PickFreePort(master_host); };
    KvTable* table = table_.get();
    hooks.attempt_over = [table](const std::string& ns) { table->DropNamespace(ns); };
    coordinator_ = std::make_unique<JoinCoordinator>(options_, std::move(hooks));
    rendezvous_service_ =
        std::make_unique<RendezvousService>(*coordinator_, options_.token, unix_endpoint_);
    store_service_ = std::make_unique<StoreService>(*table_, options_.token,
                                                    [this](absl::Time when) { Wake(when); });

    grpc::ServerBuilder builder;
    std::shared_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor;
    if (gate_ == nullptr) {
      // port_ is written during BuildAndStart, before the server accepts its first call.
      builder.AddListeningPort(bind, *credentials, &port_);
    } else {
      acceptor = builder.experimental().AddExternalConnectionAcceptor(
          grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, *credentials);
    }
    builder.SetMaxReceiveMessageSize(defaults::kMaxMessageBytes);
    builder.SetMaxSendMessageSize(defaults::kMaxMessageBytes);
    builder.experimental().SetInterceptorCreators(ServerInterceptors(bind, security));
    // Bounded before authentication: a peer that cannot finish the TLS handshake in time is
    // dropped, and gRPC's buffers for every connection together stay under the quota.
    grpc::ResourceQuota quota("accel-rendezvous");
    quota.Resize(static_cast<std::size_t>(defaults::kServerMemoryQuotaBytes));
    builder.SetResourceQuota(quota);
    builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(
                                   absl::FromChrono(defaults::kServerHandshakeTimeout))));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                               defaults::kServerMaxConcurrentStreams);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(
                                   absl::FromChrono(defaults::kServerMaxConnectionIdle))));
    builder.RegisterService(rendezvous_service_.get());
    builder.RegisterService(store_service_.get());
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || (unix_endpoint_.empty() && port_ == 0)) {
      return absl::UnavailableError(
          absl::StrCat("start rendezvous server: cannot listen on ", bind));
    }
    if (gate_ != nullptr) {
      gate_->Start([acceptor](int fd) {
        grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters params;
        params.fd = fd;  // gRPC owns it from here
        acceptor->HandleNewConnection(&params);
      });
    }
    JoinCoordinator* coordinator = coordinator_.get();
    prober_ = std::make_unique<TcpProber>(
        [coordinator](int rank, absl::Time started, bool answered, absl::Time now) {
          if (rank == kControl) {
            coordinator->ControlResult(started, answered, now);
          } else {
            coordinator->ProbeResult(rank, started, answered, now);
          }
        });
    timer_ = std::thread([this] { TimerLoop(); });
    const bool loopback = host_ == "localhost" || host_ == "::1" || host_.rfind("127.", 0) == 0;
    if (options_.token.empty() && !loopback) {
      spdlog::warn(
          "rendezvous server on {} has no token: anyone who reaches it can join, use the store "
          "and abort the job (set rdzv_token_file or ACCEL_RDZV_TOKEN)",
          IsWildcard(host_) ? absl::StrCat(HostPort(host_.empty() ? "0.0.0.0" : host_, port_),
                                           " (every interface)")
                            : endpoint());
    }
    spdlog::debug("rendezvous server for run_id={} listening on {} ({})", options_.run_id,
                  endpoint(), TransportName(transport_));
    return absl::OkStatus();
  }

  int port() const override { return port_; }

  std::string endpoint() const override {
    if (!unix_endpoint_.empty()) return unix_endpoint_;
    const std::string host = IsWildcard(host_) ? "127.0.0.1" : host_;
    if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]:", port_);
    return absl::StrCat(host, ":", port_);
  }

  void Shutdown(absl::Duration grace) override {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      stopping_ = true;
      wake_cv_.Signal();
    }
    if (server_ != nullptr) {
      // A machine whose watch arrives just after the attempt ended (the others may already be
      // exiting) is told how it ended, not cut off as if the server had died.
      coordinator_->AwaitTerminalSent(absl::Now() + grace);
      coordinator_->Shutdown();
      table_->FailAll(absl::UnavailableError("store wait: the rendezvous server is shutting down"));
      if (gate_ != nullptr) gate_->Stop();  // no new connection reaches the server
      server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
    }
    if (timer_.joinable()) timer_.join();
    if (!socket_dir_.empty()) {
      ::unlink(absl::StrCat(socket_dir_, "/rdzv.sock").c_str());
      ::rmdir(socket_dir_.c_str());
    }
    prober_.reset();  // no probe result reaches the coordinator after this
  }

  Transport transport() const override { return transport_; }

 private:
  // Asks the timer thread to wake by `when`.
  void Wake(absl::Time when) {
    absl::MutexLock lock(&mu_);
    if (when < next_wake_) {
      next_wake_ = when;
      wake_cv_.Signal();
    }
  }

  // Fires join timeouts, heartbeat losses and KV wait deadlines, and points the prober at the
  // silent machines, sleeping until the next one.
  void TimerLoop() {
    const absl::Duration sweep = absl::FromChrono(defaults::kServerSweepInterval);
    while (true) {
      const absl::Time now = absl::Now();
      const absl::Time next =
          std::min({coordinator_->Tick(now), table_->ExpireWaiters(now), now + sweep});
      std::vector<ProbeTarget> targets = coordinator_->ProbeTargets(now);
      if (!targets.empty()) {  // beside them, the server's own port: the control
        const std::string self = endpoint();
        const std::size_t colon = self.rfind(':');
        std::string host = self.substr(0, colon);
        if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
        targets.push_back(ProbeTarget{kControl, host, port_});
      }
      prober_->SetTargets(targets);
      absl::MutexLock lock(&mu_);
      next_wake_ = next;
      while (!stopping_ && absl::Now() < next_wake_) {
        wake_cv_.WaitWithDeadline(&mu_, next_wake_);  // Wake signals when it moves next_wake_
      }
      if (stopping_) return;
    }
  }

  const ServerOptions options_;
  Transport transport_ = Transport::kPlaintext;
  std::string unix_endpoint_;  // "unix:PATH" when serving on a Unix socket
  std::string socket_dir_;     // the private directory this server made for it, removed at exit
  std::string host_;
  int port_ = 0;
  std::unique_ptr<KvTable> table_;
  std::unique_ptr<JoinCoordinator> coordinator_;
  std::unique_ptr<RendezvousService> rendezvous_service_;
  std::unique_ptr<StoreService> store_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<ConnectionGate> gate_;  // TCP only; stopped (and destroyed) before server_
  std::unique_ptr<TcpProber> prober_;     // probes silent machines' hosts for the coordinator
  std::thread timer_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time next_wake_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::CondVar wake_cv_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RendezvousServer>> RendezvousServer::Start(
    const ServerOptions& options) {
  if (absl::Status status = Validate(options); !status.ok()) return status;
  auto server = std::make_unique<GrpcRendezvousServer>(options);
  if (absl::Status status = server->Init(); !status.ok()) return status;
  return server;
}

}  // namespace accel::rendezvous
