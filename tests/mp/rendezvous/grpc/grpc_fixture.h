// The gRPC rendezvous server on a Unix socket (a one-machine job's transport, where calls carry
// the token in metadata) with a small store, and store clients for it: the fixture of
// server_test.cc and server_auth_test.cc. TCP and its TLS: transport_test.cc.
#pragma once

#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "accel/rendezvous/v1/rendezvous.grpc.pb.h"
#include "rendezvous/grpc/auth.h"
#include "rendezvous/grpc/channel.h"
#include "rendezvous/grpc/rendezvous_client.h"
#include "rendezvous/grpc/server.h"
#include "rendezvous/grpc/store_client.h"

namespace accel::rendezvous::testing_grpc {

class GrpcTest : public ::testing::Test {
 protected:
  void SetUp() override { Restart(64 * 1024); }

  // (Re)starts the server with a store cap of `max_total_bytes`.
  void Restart(std::int64_t max_total_bytes) {
    if (server_ != nullptr) server_->Shutdown();
    ServerOptions options;
    options.bind_address = "unix:";
    options.run_id = "run";
    options.num_machines = 2;
    options.token = "tok";
    options.rdzv_timeout = absl::Seconds(20);
    options.limits.max_value_bytes = 1024;
    options.limits.max_total_bytes = max_total_bytes;
    auto server = RendezvousServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  std::unique_ptr<Store> Connect(const std::string& ns = "run/0",
                                 const std::string& token = "tok") {
    auto store = ConnectStore(server_->endpoint(), token, ns);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  std::unique_ptr<RendezvousServer> server_;
};

}  // namespace accel::rendezvous::testing_grpc
