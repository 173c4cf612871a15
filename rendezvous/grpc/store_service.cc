#include "rendezvous/grpc/store_service.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "rendezvous/grpc/auth.h"
#include "rendezvous/grpc/pending_reactor.h"
#include "rendezvous/store/handlers.h"

namespace accel::rendezvous {

StoreService::StoreService(KvTable& table, std::string token, std::function<void(absl::Time)> wake)
    : table_(table), token_(std::move(token)), wake_(std::move(wake)) {}

grpc::ServerUnaryReactor* StoreService::Answer(grpc::CallbackServerContext* context,
                                               const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpc(status));
  return reactor;
}

grpc::ServerUnaryReactor* StoreService::Set(grpc::CallbackServerContext* context,
                                            const v1::SetRequest* request, v1::Ack* /*response*/) {
  absl::Status status = CheckToken(*context, token_, "store set");
  if (status.ok()) status = HandleSet(table_, *request);
  return Answer(context, status);
}

grpc::ServerUnaryReactor* StoreService::Get(grpc::CallbackServerContext* context,
                                            const v1::GetRequest* request,
                                            v1::GetResponse* response) {
  if (absl::Status s = CheckToken(*context, token_, "store get"); !s.ok()) {
    return Answer(context, s);
  }
  if (request->timeout_ms() == 0) {
    absl::StatusOr<v1::GetResponse> result = HandleGetNow(table_, *request);
    if (result.ok()) *response = *std::move(result);
    return Answer(context, result.status());
  }
  KvTable& table = table_;
  v1::GetRequest copy = *request;
  return StartWait(context, request->ns(), {request->key()}, request->timeout_ms(),
                   [&table, copy, response](absl::Status waited) {
                     if (!waited.ok()) {
                       return absl::Status(
                           waited.code(),
                           absl::StrCat("get store key \"", copy.key(), "\": ", waited.message()));
                     }
                     absl::StatusOr<v1::GetResponse> result = HandleGetNow(table, copy);
                     if (result.ok()) *response = *std::move(result);
                     return result.status();
                   });
}

grpc::ServerUnaryReactor* StoreService::Add(grpc::CallbackServerContext* context,
                                            const v1::AddRequest* request,
                                            v1::AddResponse* response) {
  absl::Status status = CheckToken(*context, token_, "store add");
  if (status.ok()) {
    absl::StatusOr<v1::AddResponse> result = HandleAdd(table_, *request);
    if (result.ok()) *response = *std::move(result);
    status = result.status();
  }
  return Answer(context, status);
}

grpc::ServerUnaryReactor* StoreService::Wait(grpc::CallbackServerContext* context,
                                             const v1::WaitRequest* request,
                                             v1::Ack* /*response*/) {
  if (absl::Status s = CheckToken(*context, token_, "store wait"); !s.ok()) {
    return Answer(context, s);
  }
  std::vector<std::string> keys(request->keys().begin(), request->keys().end());
  return StartWait(context, request->ns(), std::move(keys), request->timeout_ms(),
                   [](absl::Status waited) { return waited; });
}

grpc::ServerUnaryReactor* StoreService::Delete(grpc::CallbackServerContext* context,
                                               const v1::DeleteRequest* request,
                                               v1::DeleteResponse* response) {
  absl::Status status = CheckToken(*context, token_, "store delete");
  if (status.ok()) {
    absl::StatusOr<v1::DeleteResponse> result = HandleDelete(table_, *request);
    if (result.ok()) *response = *std::move(result);
    status = result.status();
  }
  return Answer(context, status);
}

grpc::ServerUnaryReactor* StoreService::CompareSet(grpc::CallbackServerContext* context,
                                                   const v1::CompareSetRequest* request,
                                                   v1::CompareSetResponse* response) {
  absl::Status status = CheckToken(*context, token_, "store compare-set");
  if (status.ok()) {
    absl::StatusOr<v1::CompareSetResponse> result = HandleCompareSet(table_, *request);
    if (result.ok()) *response = *std::move(result);
    status = result.status();
  }
  return Answer(context, status);
}

grpc::ServerUnaryReactor* StoreService::StartWait(grpc::CallbackServerContext* context,
                                                  const std::string& ns,
                                                  std::vector<std::string> keys,
                                                  std::int64_t timeout_ms,
                                                  std::function<absl::Status(absl::Status)> then) {
  if (absl::Status s = CheckNamespace(ns); !s.ok()) return Answer(context, s);
  const absl::Time now = absl::Now();
  absl::StatusOr<absl::Time> deadline =
      WaitDeadline(timeout_ms, now, absl::FromChrono(context->deadline()));
  if (!deadline.ok()) return Answer(context, deadline.status());
  KvTable& table = table_;
  auto* reactor = new PendingReactor([&table](std::uint64_t id) {
    table.CancelWaiter(id, absl::CancelledError("store wait: cancelled by the client"));
  });
  std::shared_ptr<PendingReactor::Registration> registration = reactor->registration();
  // After AddWaiter the reactor may already be finished and deleted: only `registration` is
  // touched.
  const KvTable::WaiterId waiter = table_.AddWaiter(
      ns, std::move(keys), *deadline, [reactor, then = std::move(then)](absl::Status waited) {
        reactor->Finish(ToGrpc(then(std::move(waited))));
      });
  registration->Registered(waiter);
  if (waiter != 0) wake_(*deadline);
  return reactor;
}

}  // namespace accel::rendezvous
