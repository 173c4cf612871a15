// Conversions between the plain structs of rendezvous_client.h and the v1 protos.
#ifndef ACCEL_RENDEZVOUS_GRPC_CLIENT_CONVERT_H_
#define ACCEL_RENDEZVOUS_GRPC_CLIENT_CONVERT_H_

#include "accel/rendezvous/v1/rendezvous.pb.h"
#include "rendezvous/grpc/rendezvous_client.h"

namespace accel::rendezvous {

v1::JoinRequest ToProto(const JoinRequest& request);
JoinResult FromProto(const v1::JoinResponse& response);
v1::RootCause ToProto(const RootCause& cause);
RootCause FromProto(const v1::RootCause& cause);
// KIND_UNSPECIFIED maps to kServerLost (a server that sent garbage).
Event FromProto(const v1::Event& event);

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_CLIENT_CONVERT_H_
