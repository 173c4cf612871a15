// StoreService: the gRPC callback service for accel.rendezvous.v1.Store over a KvTable.
//
// No thread is held per waiting Get/Wait: waits are KvTable waiters whose deadlines the server's
// timer thread fires (ExpireWaiters), and a client that goes away withdraws its waiter.
// Thread-safe; `table` and `wake` must outlive the service.
#ifndef ACCEL_RENDEZVOUS_GRPC_STORE_SERVICE_H_
#define ACCEL_RENDEZVOUS_GRPC_STORE_SERVICE_H_

#include <functional>
#include <string>

#include "accel/rendezvous/v1/rendezvous.grpc.pb.h"
#include "rendezvous/store/kv_table.h"

namespace accel::rendezvous {

class StoreService final : public v1::Store::CallbackService {
 public:
  // `wake(t)` asks the timer thread to run ExpireWaiters no later than t.
  StoreService(KvTable& table, std::string token, std::function<void(absl::Time)> wake);

  grpc::ServerUnaryReactor* Set(grpc::CallbackServerContext* context, const v1::SetRequest* request,
                                v1::Ack* response) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context, const v1::GetRequest* request,
                                v1::GetResponse* response) override;
  grpc::ServerUnaryReactor* Add(grpc::CallbackServerContext* context, const v1::AddRequest* request,
                                v1::AddResponse* response) override;
  grpc::ServerUnaryReactor* Wait(grpc::CallbackServerContext* context,
                                 const v1::WaitRequest* request, v1::Ack* response) override;
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* context,
                                   const v1::DeleteRequest* request,
                                   v1::DeleteResponse* response) override;
  grpc::ServerUnaryReactor* CompareSet(grpc::CallbackServerContext* context,
                                       const v1::CompareSetRequest* request,
                                       v1::CompareSetResponse* response) override;

 private:
  grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context,
                                   const absl::Status& status);
  // Registers a waiter; `then` runs when it completes (filling the response) and its status is
  // the call's.
  grpc::ServerUnaryReactor* StartWait(grpc::CallbackServerContext* context, const std::string& ns,
                                      std::vector<std::string> keys, std::int64_t timeout_ms,
                                      std::function<absl::Status(absl::Status)> then);

  KvTable& table_;
  const std::string token_;
  const std::function<void(absl::Time)> wake_;
};

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_STORE_SERVICE_H_
