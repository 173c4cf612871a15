// The gRPC RendezvousClient: Join with retries, a Watch thread and a heartbeat thread.
#include "rendezvous/grpc/rendezvous_client.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "accel/rendezvous/v1/rendezvous.grpc.pb.h"
#include "common/absl_view.h"
#include "common/defaults.h"
#include "common/logging.h"
#include "rendezvous/grpc/auth.h"
#include "rendezvous/grpc/channel.h"
#include "rendezvous/grpc/client_convert.h"
#include "rendezvous/grpc/grpc_log.h"
#include "rendezvous/grpc/heartbeats.h"
#include "rendezvous/grpc/tcp_probe.h"
#include "rendezvous/grpc/transport.h"

namespace accel::rendezvous {
namespace {

std::string RandomNonce() {
  absl::BitGen gen;
  return absl::StrFormat("%016x%016x", absl::Uniform<std::uint64_t>(gen),
                         absl::Uniform<std::uint64_t>(gen));
}

class GrpcRendezvousClient final : public RendezvousClient {
 public:
  GrpcRendezvousClient(const ClientOptions& options, std::shared_ptr<grpc::Channel> channel)
      : options_(options),
        transport_(ClientTransport(options.endpoint, Security(options))),
        metadata_token_(MetadataToken(transport_, options.token)),
        channel_(channel),
        stub_(v1::Rendezvous::NewStub(channel)),
        nonce_(RandomNonce()) {
    absl::StatusOr<ProbeListener> listener = ProbeListener::Open();
    if (listener.ok()) {
      listener_.emplace(*std::move(listener));
    } else {  // machine 0 then judges this machine by its heartbeats alone
      spdlog::debug("{}", std::string(listener.status().message()));
    }
  }

  ~GrpcRendezvousClient() override {
    StopWatch();
    JoinThreads();
  }

  absl::StatusOr<JoinResult> Join(const JoinRequest& request, absl::Time deadline) override {
    v1::JoinRequest proto = ToProto(request);
    proto.set_agent_nonce(nonce_);
    proto.set_probe_port(listener_.has_value() ? listener_->port() : 0);
    const std::string operation = absl::StrCat("join rendezvous at ", options_.endpoint);
    absl::Duration backoff = options_.backoff_initial;
    while (true) {
      // A server that cannot prove it holds the token is refused at once (a wrong token here or
      // there, a man in the middle, a squatter): nothing was sent to it, and waiting cannot help.
      if (absl::Status connected =
              AwaitConnection(channel_, options_.endpoint, transport_, deadline);
          !connected.ok()) {
        return absl::UnauthenticatedError(absl::StrCat(operation, ": ", connected.message()));
      }
      grpc::ClientContext context;
      PrepareContext(context, metadata_token_, deadline);
      v1::JoinResponse response;
      const grpc::Status status = stub_->Join(&context, proto, &response);
      if (status.ok()) {
        JoinResult result = FromProto(response);
        absl::MutexLock lock(&mu_);
        identity_ = Identity{result.run_id.empty() ? options_.run_id : result.run_id,
                             result.machine_secret};
        return result;
      }
      // wait_for_ready rides out a server that is not up yet; UNAVAILABLE here means it went
      // away mid-call (or refused us while shutting down): try again until the deadline.
      if (status.error_code() == grpc::StatusCode::UNAVAILABLE &&
          absl::Now() + backoff < deadline) {
        spdlog::debug("{}: {}; retrying in {}", operation, status.error_message(),
                      absl::FormatDuration(backoff));
        absl::SleepFor(backoff);
        backoff = std::min(backoff * 2, options_.backoff_max);
        continue;
      }
      if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
          status.error_message() == "Deadline Exceeded") {
        return absl::DeadlineExceededError(
            absl::StrCat(operation, ": no answer before the deadline (is the server at ",
                         options_.endpoint, " up and reachable?)"));
      }
      return FromGrpc(status, operation);
    }
  }

  absl::Status Watch(std::int64_t attempt, EventCallback on_event) override {
    if (std::this_thread::get_id() == watch_thread_.get_id()) {
      return absl::FailedPreconditionError(
          "watch rendezvous: Watch was called from the event callback");
    }
    {
      absl::MutexLock lock(&mu_);
      if (watching_ && !stopping_) {
        return absl::FailedPreconditionError("watch rendezvous: already watching");
      }
    }
    JoinThreads();  // the previous watch has ended (or was stopped): reap its threads
    absl::MutexLock lock(&mu_);
    watching_ = true;
    stopping_ = false;
    watch_context_ = std::make_unique<grpc::ClientContext>();
    if (!metadata_token_.empty()) watch_context_->AddMetadata(kTokenMetadataKey, metadata_token_);
    lost_reason_.clear();
    watch_thread_ = std::thread(
        [this, attempt, on_event = std::move(on_event)] { RunWatch(attempt, on_event); });
    heartbeats_ =
        std::make_unique<Heartbeats>(HeartbeatMaker(attempt), [this](const std::string& why) {
          absl::MutexLock lost_lock(&mu_);
          if (stopping_) return;
          lost_reason_ = why;
          watch_context_->TryCancel();
        });
    return absl::OkStatus();
  }

  void StopWatch() override {
    {
      absl::MutexLock lock(&mu_);
      if (!watching_) return;
      stopping_ = true;
      if (watch_context_) watch_context_->TryCancel();
      if (heartbeats_) heartbeats_->Stop();
    }
    // From the event callback (the watch thread) the threads are joined later instead.
    if (std::this_thread::get_id() != watch_thread_.get_id()) JoinThreads();
  }

  absl::Status ReportFailure(std::int64_t attempt, const RootCause& cause) override {
    return SendReport(v1::ReportRequest::FAILURE, attempt, cause, "report failure");
  }
  absl::Status ReportStopping(std::int64_t attempt, const RootCause& cause) override {
    return SendReport(v1::ReportRequest::FAILURE, attempt, cause, "report stopping",
                      /*stopping=*/true);
  }
  absl::Status ReportDone(std::int64_t attempt) override {
    return SendReport(v1::ReportRequest::DONE, attempt, RootCause{}, "report done");
  }
  absl::Status RequestRestart(std::int64_t attempt, const RootCause& cause) override {
    return SendReport(v1::ReportRequest::RESTART, attempt, cause, "request restart");
  }
  absl::Status ReportHang(std::int64_t attempt, const RootCause& cause) override {
    return SendReport(v1::ReportRequest::HANG, attempt, cause, "report hang");
  }

 private:
  void JoinThreads() {
    if (watch_thread_.joinable() && std::this_thread::get_id() != watch_thread_.get_id()) {
      watch_thread_.join();
    }
    std::unique_ptr<Heartbeats> heartbeats;
    {
      absl::MutexLock lock(&mu_);
      heartbeats = std::move(heartbeats_);
    }
    heartbeats.reset();  // waits for its thread and calls, without mu_ (its on_lost takes it)
    absl::MutexLock lock(&mu_);
    if (!watch_thread_.joinable()) watching_ = false;
  }

  void RunWatch(std::int64_t attempt, const EventCallback& on_event) {
    const Identity identity = CurrentIdentity();
    v1::WatchRequest request;
    request.set_run_id(identity.run_id);
    request.set_machine_rank(options_.machine_rank);
    request.set_attempt(attempt);
    request.set_machine_secret(identity.secret);
    std::unique_ptr<grpc::ClientReader<v1::Event>> reader =
        stub_->Watch(watch_context_.get(), request);
    v1::Event event;
    const bool got = reader->Read(&event);
    if (got) watch_context_->TryCancel();  // the event is terminal; nothing else will come
    const grpc::Status status = reader->Finish();
    Event delivered;
    if (got) {
      delivered = FromProto(event);
    } else {
      delivered.kind = Event::Kind::kServerLost;
      delivered.attempt = attempt;
      delivered.root_cause.message =
          absl::StrCat("its connection closed (", status.error_message(), ")");
    }
    {
      absl::MutexLock lock(&mu_);
      if (!got && !lost_reason_.empty()) {
        delivered.root_cause.message = lost_reason_;
        delivered.server_unreachable = true;
      }
      const bool stopped = stopping_;
      stopping_ = true;
      if (heartbeats_) heartbeats_->Stop();
      if (stopped) return;
    }
    on_event(delivered);
  }

  // Returns what the heartbeats of `attempt` need: the request, the server to probe.
  HeartbeatOptions HeartbeatMaker(std::int64_t attempt) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    HeartbeatOptions o;
    o.stub = stub_.get();
    o.token = metadata_token_;
    o.request.set_run_id(identity_.run_id);
    o.request.set_machine_rank(options_.machine_rank);
    o.request.set_attempt(attempt);
    o.request.set_machine_secret(identity_.secret);
    o.liveness = options_.liveness;
    const std::size_t colon = options_.endpoint.rfind(':');
    int port = 0;
    if (colon != std::string::npos &&
        absl::SimpleAtoi(options_.endpoint.substr(colon + 1), &port)) {
      std::string host = options_.endpoint.substr(0, colon);
      if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
      }
      o.server = ProbeTarget{0, host, port};
    }
    o.listener = listener_.has_value() ? &*listener_ : nullptr;
    return o;
  }

  // `stopping`: ReportStopping's bounds (no wait for a connection, a short deadline).
  absl::Status SendReport(v1::ReportRequest::Kind kind, std::int64_t attempt,
                          const RootCause& cause, std::string_view operation,
                          bool stopping = false) {
    const Identity identity = CurrentIdentity();
    v1::ReportRequest request;
    request.set_run_id(identity.run_id);
    request.set_machine_rank(options_.machine_rank);
    request.set_attempt(attempt);
    request.set_kind(kind);
    request.set_machine_secret(identity.secret);
    *request.mutable_cause() = ToProto(cause);
    const absl::Time deadline =
        absl::Now() + (stopping ? std::min(options_.rpc_deadline,
                                           absl::FromChrono(defaults::kStoppingReportDeadline))
                                : options_.rpc_deadline);
    const std::string where = absl::StrCat(Av(operation), " to rendezvous at ", options_.endpoint);
    // A refused connection is said at once, not waited out (a stranger's forged report).
    if (absl::Status connected =
            stopping ? absl::OkStatus()
                     : AwaitConnection(channel_, options_.endpoint, transport_, deadline);
        !connected.ok()) {
      return absl::UnauthenticatedError(absl::StrCat(where, ": ", connected.message()));
    }
    grpc::ClientContext context;
    PrepareContext(context, metadata_token_, deadline);
    // A server that has gone (or went away meanwhile) fails the call at once instead of holding
    // it until the deadline.
    if (stopping) context.set_wait_for_ready(false);
    v1::Ack ack;
    return FromGrpc(stub_->Report(&context, request, &ack), where);
  }

  // Who this machine is to the server since its last Join: the run and its secret.
  struct Identity {
    std::string run_id;
    std::string secret;
  };
  Identity CurrentIdentity() {
    absl::MutexLock lock(&mu_);
    return identity_;
  }

  static TransportSecurity Security(const ClientOptions& o) {
    return TransportSecurity{o.token, o.tls_ca_path, "", ""};
  }

  const ClientOptions options_;
  const Transport transport_;
  const std::string metadata_token_;  // "" when TLS proves the token instead
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::Rendezvous::Stub> stub_;
  const std::string nonce_;

  absl::Mutex mu_;
  bool watching_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::string lost_reason_ ABSL_GUARDED_BY(mu_);  // why the heartbeats gave up on the server
  Identity identity_ ABSL_GUARDED_BY(mu_){options_.run_id, ""};
  // Set in Watch before the threads start; read by them.
  std::unique_ptr<grpc::ClientContext> watch_context_;
  std::thread watch_thread_;
  std::unique_ptr<Heartbeats> heartbeats_ ABSL_GUARDED_BY(mu_);
  std::optional<ProbeListener> listener_;  // set in the constructor
};

}  // namespace

absl::StatusOr<std::unique_ptr<RendezvousClient>> NewGrpcRendezvousClient(
    const ClientOptions& options) {
  RouteGrpcLogs();  // a launcher's: refused handshakes are said once, not per attempt
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      MakeChannel(ChannelOptions{options.endpoint, options.token, options.tls_ca_path,
                                 options.backoff_initial, options.backoff_max});
  if (!channel.ok()) return channel.status();
  return std::make_unique<GrpcRendezvousClient>(options, *std::move(channel));
}

}  // namespace accel::rendezvous
