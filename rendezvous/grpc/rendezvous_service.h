// RendezvousService: the gRPC callback service for accel.rendezvous.v1.Rendezvous over a
// JoinCoordinator (Join, Watch, Heartbeat, Report).
//
// Join waits without a thread (PendingReactor); Watch is a server stream that carries the
// attempt's one terminal event, and whose break (client gone) tells the coordinator the machine
// is lost. Thread-safe; `coordinator` must outlive the service.
#ifndef ACCEL_RENDEZVOUS_GRPC_RENDEZVOUS_SERVICE_H_
#define ACCEL_RENDEZVOUS_GRPC_RENDEZVOUS_SERVICE_H_

#include <string>

#include "accel/rendezvous/v1/rendezvous.grpc.pb.h"
#include "rendezvous/join/coordinator.h"

namespace accel::rendezvous {

class RendezvousService final : public v1::Rendezvous::CallbackService {
 public:
  // `store_endpoint`: what a Join answer names as the store ("" = the coordinator's host:port;
  // a server on a Unix socket gives its own unix:PATH).
  RendezvousService(JoinCoordinator& coordinator, std::string token,
                    std::string store_endpoint = "");

  grpc::ServerUnaryReactor* Join(grpc::CallbackServerContext* context,
                                 const v1::JoinRequest* request,
                                 v1::JoinResponse* response) override;
  grpc::ServerWriteReactor<v1::Event>* Watch(grpc::CallbackServerContext* context,
                                             const v1::WatchRequest* request) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* context,
                                      const v1::HeartbeatRequest* request,
                                      v1::Ack* response) override;
  grpc::ServerUnaryReactor* Report(grpc::CallbackServerContext* context,
                                   const v1::ReportRequest* request, v1::Ack* response) override;

 private:
  JoinCoordinator& coordinator_;
  const std::string token_;
  const std::string store_endpoint_;
};

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_RENDEZVOUS_SERVICE_H_
