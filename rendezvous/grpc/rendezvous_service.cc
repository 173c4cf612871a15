#include "rendezvous/grpc/rendezvous_service.h"

#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/absl_view.h"
#include "common/defaults.h"
#include "common/logging.h"
#include "rendezvous/grpc/auth.h"
#include "rendezvous/grpc/pending_reactor.h"

namespace accel::rendezvous {
namespace {

grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpc(status));
  return reactor;
}

// A Watch stream. The coordinator holds its Sink; the sink ends the stream exactly once (the
// terminal event, a close on shutdown, or the client's cancel) and forgets the reactor then.
class WatchReactor final : public grpc::ServerWriteReactor<v1::Event> {
 public:
  class Sink final : public JoinCoordinator::EventSink {
   public:
    explicit Sink(WatchReactor* reactor) : reactor_(reactor) {}

    void Send(const v1::Event& event) override {
      absl::MutexLock lock(&mu_);
      if (reactor_ == nullptr) return;
      event_ = event;
      std::exchange(reactor_, nullptr)
          ->StartWriteAndFinish(&event_, grpc::WriteOptions(), grpc::Status::OK);
    }
    void Close(const absl::Status& status) override {
      absl::MutexLock lock(&mu_);
      if (reactor_ == nullptr) return;
      std::exchange(reactor_, nullptr)->Finish(ToGrpc(status));
    }
    // Ends the stream because the client went away; returns whether it was still open.
    bool Cancel() {
      absl::MutexLock lock(&mu_);
      if (reactor_ == nullptr) return false;
      std::exchange(reactor_, nullptr)->Finish(grpc::Status::CANCELLED);
      return true;
    }
    std::atomic<std::uint64_t> id{0};
    std::atomic<bool> cancelled{false};

   private:
    absl::Mutex mu_;
    WatchReactor* reactor_ ABSL_GUARDED_BY(mu_);
    v1::Event event_;  // written once, before the write that reads it starts
  };

  explicit WatchReactor(JoinCoordinator& coordinator) : coordinator_(coordinator) {}

  // Registers with the coordinator. After this the reactor may already be finished and deleted.
  // A non-OK `auth` ends the stream at once.
  static void Begin(WatchReactor* reactor, const v1::WatchRequest& request,
                    const absl::Status& auth) {
    JoinCoordinator& coordinator = reactor->coordinator_;
    std::shared_ptr<Sink> sink = reactor->sink_;
    if (!auth.ok()) {
      sink->Close(auth);
      return;
    }
    absl::StatusOr<JoinCoordinator::Id> id = coordinator.Watch(request, sink);
    if (!id.ok()) {
      sink->Close(id.status());
      return;
    }
    sink->id.store(*id);
    // A cancel that came before the id was known could not report the loss: report it here.
    if (sink->cancelled.load()) coordinator.WatchBroken(*id, absl::Now());
  }

  void OnCancel() override {
    if (!sink_->Cancel()) return;  // the stream had already ended with its event
    sink_->cancelled.store(true);
    const JoinCoordinator::Id id = sink_->id.load();
    if (id != 0) coordinator_.WatchBroken(id, absl::Now());
  }
  void OnDone() override { delete this; }

 private:
  JoinCoordinator& coordinator_;
  std::shared_ptr<Sink> sink_ = std::make_shared<Sink>(this);
};

// Returns INVALID_ARGUMENT when a Join, Heartbeat or Report request is larger than they ever are
// (the server's receive limit is sized for the store's values).
absl::Status CheckRequestSize(const google::protobuf::Message& request,
                              std::string_view operation) {
  const std::size_t size = request.ByteSizeLong();
  if (size <= static_cast<std::size_t>(defaults::kMaxRendezvousRequestBytes)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(Av(operation), ": the request is ", size,
                                                 " bytes; the limit is ",
                                                 defaults::kMaxRendezvousRequestBytes));
}

}  // namespace

RendezvousService::RendezvousService(JoinCoordinator& coordinator, std::string token,
                                     std::string store_endpoint)
    : coordinator_(coordinator),
      token_(std::move(token)),
      store_endpoint_(std::move(store_endpoint)) {}

grpc::ServerUnaryReactor* RendezvousService::Join(grpc::CallbackServerContext* context,
                                                  const v1::JoinRequest* request,
                                                  v1::JoinResponse* response) {
  if (absl::Status s = CheckToken(*context, token_, "join rendezvous"); !s.ok()) {
    const std::string why(s.message());
    if (coordinator_.NoteRefusedJoin(*request, context->peer(), why)) {
      spdlog::warn("rendezvous: refused a join claiming machine_rank {}: {}",
                   request->machine_rank(), why);
    }
    return Answer(context, s);
  }
  if (absl::Status s = CheckRequestSize(*request, "join rendezvous"); !s.ok()) {
    return Answer(context, s);
  }
  JoinCoordinator& coordinator = coordinator_;
  auto* reactor =
      new PendingReactor([&coordinator](std::uint64_t id) { coordinator.CancelJoin(id); });
  std::shared_ptr<PendingReactor::Registration> registration = reactor->registration();
  // After Join returns the reactor may already be finished and deleted: only `registration` is
  // touched.
  const JoinCoordinator::Id join_id = coordinator_.Join(
      *request, context->peer(), absl::Now(),
      [reactor, response, store = store_endpoint_](absl::StatusOr<v1::JoinResponse> result) {
        if (result.ok()) *response = *std::move(result);
        if (result.ok() && !store.empty()) response->set_store_endpoint(store);
        reactor->Finish(ToGrpc(result.status()));
      });
  registration->Registered(join_id);
  return reactor;
}

grpc::ServerWriteReactor<v1::Event>* RendezvousService::Watch(grpc::CallbackServerContext* context,
                                                              const v1::WatchRequest* request) {
  auto* reactor = new WatchReactor(coordinator_);
  WatchReactor::Begin(reactor, *request, CheckToken(*context, token_, "watch rendezvous"));
  return reactor;
}

grpc::ServerUnaryReactor* RendezvousService::Heartbeat(grpc::CallbackServerContext* context,
                                                       const v1::HeartbeatRequest* request,
                                                       v1::Ack* /*response*/) {
  absl::Status status = CheckToken(*context, token_, "heartbeat");
  if (status.ok()) status = CheckRequestSize(*request, "heartbeat");
  if (status.ok()) status = coordinator_.Heartbeat(*request, absl::Now());
  return Answer(context, status);
}

grpc::ServerUnaryReactor* RendezvousService::Report(grpc::CallbackServerContext* context,
                                                    const v1::ReportRequest* request,
                                                    v1::Ack* /*response*/) {
  absl::Status status = CheckToken(*context, token_, "report to rendezvous");
  if (status.ok()) status = CheckRequestSize(*request, "report to rendezvous");
  if (status.ok()) status = coordinator_.Report(*request, absl::Now());
  return Answer(context, status);
}

}  // namespace accel::rendezvous
