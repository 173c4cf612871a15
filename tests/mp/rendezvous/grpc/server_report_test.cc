// A launcher's report that it is being stopped (RendezvousClient::ReportStopping) over real gRPC
// with TLS from the token on 127.0.0.1: it reaches a live server and aborts the job, and it does
// not wait for a server that has just shut down (a scheduler signals every machine at once; a
// launcher that waited lingered past scancel's bound), unlike an ordinary report, which waits
// for the server up to its deadline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "rendezvous/grpc/rendezvous_client.h"
#include "rendezvous/grpc/server.h"

namespace accel::rendezvous {
namespace {

constexpr char kToken[] = "4e1f0c9a7b2d8e3f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f";

class StoppingReportTest : public ::testing::Test {
 protected:
  // Starts a two-machine job's server on TCP (mutual TLS from the token) and joins both machines
  // with clients whose calls wait at most `rpc_deadline`.
  void StartJob(absl::Duration rpc_deadline) {
    ServerOptions options;
    options.bind_address = "127.0.0.1:0";
    options.run_id = "run-stopping";
    options.num_machines = 2;
    options.token = kToken;
    options.rdzv_timeout = absl::Seconds(20);
    auto server = RendezvousServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    std::vector<absl::StatusOr<JoinResult>> joined(2, absl::UnknownError("not joined"));
    std::vector<std::thread> threads;
    for (int rank = 0; rank < 2; ++rank) {
      ClientOptions client;
      client.endpoint = server_->endpoint();
      client.token = kToken;
      client.machine_rank = rank;
      client.rpc_deadline = rpc_deadline;
      auto made = NewGrpcRendezvousClient(client);
      ASSERT_TRUE(made.ok()) << made.status();
      clients_.push_back(*std::move(made));
    }
    for (int rank = 0; rank < 2; ++rank) {
      threads.emplace_back([&, rank] {
        JoinRequest request;
        request.machine_rank = rank;
        request.num_machines = 2;
        joined[rank] = clients_[rank]->Join(request, absl::Now() + absl::Seconds(20));
      });
    }
    for (std::thread& t : threads) t.join();
    ASSERT_TRUE(joined[0].ok() && joined[1].ok()) << joined[0].status() << joined[1].status();
    attempt_ = joined[0]->attempt;
  }

  static RootCause Sigterm(int machine_rank) {
    RootCause cause;
    cause.machine_rank = machine_rank;
    cause.signal = 15;
    cause.message = "launcher stopped by SIGTERM";
    return cause;
  }

  std::unique_ptr<RendezvousServer> server_;
  std::vector<std::unique_ptr<RendezvousClient>> clients_;
  std::int64_t attempt_ = 0;
};

TEST_F(StoppingReportTest, ReachesALiveServerAndAbortsTheJob) {
  StartJob(absl::Seconds(10));
  absl::Notification got;
  Event event;
  ASSERT_TRUE(clients_[0]
                  ->Watch(attempt_,
                          [&](const Event& e) {
                            event = e;
                            got.Notify();
                          })
                  .ok());
  ASSERT_TRUE(clients_[1]->ReportStopping(attempt_, Sigterm(1)).ok());
  ASSERT_TRUE(got.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(event.kind, Event::Kind::kAbort);
  EXPECT_EQ(event.root_cause.machine_rank, 1);
  EXPECT_EQ(event.root_cause.signal, 15);
  clients_[0]->StopWatch();
}

TEST_F(StoppingReportTest, DoesNotWaitForAServerThatHasGone) {
  StartJob(absl::Seconds(4));
  server_->Shutdown();
  absl::Time start = absl::Now();
  const absl::Status stopping = clients_[1]->ReportStopping(attempt_, Sigterm(1));
  const absl::Duration stopping_took = absl::Now() - start;
  EXPECT_FALSE(stopping.ok());
  // Failed because nothing answers, not by running out its deadline.
  EXPECT_EQ(stopping.code(), absl::StatusCode::kUnavailable) << stopping;
  EXPECT_LT(stopping_took, absl::Milliseconds(1500));
  // The control: an ordinary report waits for the server (it may be starting) to its deadline.
  start = absl::Now();
  const absl::Status ordinary = clients_[0]->ReportFailure(attempt_, Sigterm(0));
  EXPECT_FALSE(ordinary.ok());
  EXPECT_GE(absl::Now() - start, absl::Seconds(3)) << ordinary;
}

}  // namespace
}  // namespace accel::rendezvous
