// The store and join over real gRPC on a Unix socket (a one-machine job's transport): semantics,
// exact wait deadlines, limits, garbage requests, thousands of concurrent waits, cancellation and
// shutdown (authentication: server_auth_test.cc; TCP and its TLS: transport_test.cc).
#include "tests/mp/rendezvous/grpc/grpc_fixture.h"

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;
using testing_grpc::GrpcTest;

TEST_F(GrpcTest, StoreRoundTripsAndNamespacesAreSeparate) {
  auto a = Connect("run/0");
  auto b = Connect("run/1");
  ASSERT_TRUE(a->Set("k", std::string("\0bin", 4)).ok());
  EXPECT_EQ(*a->Get("k", absl::ZeroDuration()), std::string("\0bin", 4));
  EXPECT_EQ(b->Get("k", absl::ZeroDuration()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*a->Add("n", 5), 5);
  EXPECT_EQ(*a->Add("n", -2), 3);
  EXPECT_EQ(*a->CompareSet("n", "3", "x"), "x");
  EXPECT_TRUE(*a->Delete("n"));
  EXPECT_FALSE(*a->Delete("n"));
}

TEST_F(GrpcTest, WaitTimesOutAtItsDeadlineNamingMissingKeys) {
  auto store = Connect();
  ASSERT_TRUE(store->Set("a", "1").ok());
  const absl::Time start = absl::Now();
  absl::Status status = store->Wait({"a", "b"}, absl::Milliseconds(300));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(status.message(), "store at " + server_->endpoint() +
                                  ": wait for store keys: deadline exceeded; still missing: \"b\"");
  EXPECT_GE(took, absl::Milliseconds(300));
  EXPECT_LT(took, absl::Milliseconds(550));  // the server's timer, plus slack for load
}

TEST_F(GrpcTest, GetWaitsUntilAnotherClientSets) {
  auto reader = Connect();
  auto writer = Connect();
  std::thread set([&] {
    absl::SleepFor(absl::Milliseconds(100));
    EXPECT_TRUE(writer->Set("nccl_id", "xyz").ok());
  });
  absl::StatusOr<std::string> value = reader->Get("nccl_id", absl::Seconds(10));
  set.join();
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, "xyz");
}

TEST_F(GrpcTest, OversizeValuesAreRefusedAndTheServerKeepsServing) {
  auto store = Connect();
  absl::Status status = store->Set("big", std::string(2000, 'x'));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("value of 2000 bytes is over the limit of 1024 bytes"));
  for (int i = 0; i < 80; ++i) {
    status = store->Set("fill" + std::to_string(i), std::string(1000, 'x'));
    if (!status.ok()) break;
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("over its limit of 65536 bytes"));
  // Over the message limit: refused by gRPC itself.
  status = store->Set("huge", std::string(20 * 1024 * 1024, 'x'));
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(store->Set("small", "ok").ok());
}

TEST_F(GrpcTest, GarbageRequestBytesGetAnErrorStatus) {
  ChannelOptions channel_options;
  channel_options.endpoint = server_->endpoint();
  auto channel = MakeChannel(channel_options);
  ASSERT_TRUE(channel.ok());
  grpc::GenericStub stub(*channel);
  const char garbage[] = "\xff\xff\xff\xff\x0f\x01garbage";
  for (const char* method :
       {"/accel.rendezvous.v1.Store/Set", "/accel.rendezvous.v1.Store/Wait",
        "/accel.rendezvous.v1.Rendezvous/Join", "/accel.rendezvous.v1.Rendezvous/Report"}) {
    grpc::ClientContext context;
    PrepareContext(context, "tok", absl::Now() + absl::Seconds(5));
    grpc::Slice slice(garbage, sizeof(garbage) - 1);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    absl::Notification done;
    grpc::Status status;
    stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
      status = s;
      done.Notify();
    });
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10))) << method;
    EXPECT_FALSE(status.ok()) << method;
  }
  EXPECT_TRUE(Connect()->Set("still", "alive").ok());
}

TEST_F(GrpcTest, ThousandsOfConcurrentWaitsAreReleasedByOneSet) {
  constexpr int kWaiters = 2000;
  Restart(16 * 1024 * 1024);  // each waiter counts against the cap too
  ChannelOptions channel_options;
  channel_options.endpoint = server_->endpoint();
  auto channel = MakeChannel(channel_options);
  ASSERT_TRUE(channel.ok());
  auto stub = v1::Store::NewStub(*channel);
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<v1::Ack> responses(kWaiters);
  v1::WaitRequest request;
  request.set_ns("run/0");
  request.add_keys("go");
  request.set_timeout_ms(30000);
  absl::BlockingCounter finished(kWaiters);
  std::atomic<int> ok{0};
  for (int i = 0; i < kWaiters; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    PrepareContext(*contexts.back(), "tok", absl::Now() + absl::Seconds(40));
    stub->async()->Wait(contexts.back().get(), &request, &responses[i], [&](grpc::Status s) {
      if (s.ok()) ok.fetch_add(1);
      finished.DecrementCount();
    });
  }
  absl::SleepFor(absl::Seconds(1));  // let them all arrive and block
  EXPECT_EQ(ok.load(), 0);
  const absl::Time start = absl::Now();
  ASSERT_TRUE(Connect()->Set("go", "1").ok());
  finished.Wait();
  EXPECT_EQ(ok.load(), kWaiters);
  const absl::Duration released = absl::Now() - start;
  std::printf("%d waiters released %s after the set\n", kWaiters,
              absl::FormatDuration(released).c_str());
  EXPECT_LT(released, absl::Seconds(2));  // 0.34-0.49 s measured (3 runs, loaded 2-core VM)
}

TEST_F(GrpcTest, ShutdownFailsPendingWaitsPromptly) {
  auto store = Connect();
  absl::Status status;
  std::thread waiter([&] { status = store->Wait({"never"}, absl::Seconds(30)); });
  absl::SleepFor(absl::Milliseconds(200));
  const absl::Time start = absl::Now();
  server_->Shutdown();
  waiter.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  const absl::Duration failed = absl::Now() - start;
  std::printf("the pending wait failed %s after the shutdown\n",
              absl::FormatDuration(failed).c_str());
  EXPECT_LT(failed, absl::Seconds(1));  // 1 ms measured; not the wait's own 30 s
}

TEST_F(GrpcTest, AbandonedJoinIsWithdrawnSoItsRankCanJoinAgain) {
  JoinRequest request;
  request.run_id = "run";
  request.machine_rank = 1;
  request.num_machines = 2;
  request.hostname = "b";
  ClientOptions options;
  options.endpoint = server_->endpoint();
  options.token = "tok";
  auto first = NewGrpcRendezvousClient(options);
  ASSERT_TRUE(first.ok());
  auto gave_up = (*first)->Join(request, absl::Now() + absl::Milliseconds(300));
  EXPECT_EQ(gave_up.status().code(), absl::StatusCode::kDeadlineExceeded);
  absl::SleepFor(absl::Milliseconds(200));         // the server sees the cancel
  auto second = NewGrpcRendezvousClient(options);  // a restarted agent: another nonce
  ASSERT_TRUE(second.ok());
  absl::StatusOr<JoinResult> joined1;
  std::thread t(
      [&, request] { joined1 = (*second)->Join(request, absl::Now() + absl::Seconds(10)); });
  request.machine_rank = 0;
  request.hostname = "a";
  auto zero = NewGrpcRendezvousClient(options);
  auto joined0 = (*zero)->Join(request, absl::Now() + absl::Seconds(10));
  t.join();
  ASSERT_TRUE(joined1.ok()) << joined1.status();
  ASSERT_TRUE(joined0.ok()) << joined0.status();
  EXPECT_EQ(joined1->base_rank, 1);
  EXPECT_EQ(joined1->world_size, 2);
  EXPECT_EQ(joined0->store_endpoint, server_->endpoint());
}

TEST_F(GrpcTest, RestartRunsTheNextAttemptOnTheSameClients) {
  std::vector<std::unique_ptr<RendezvousClient>> clients;
  for (int rank = 0; rank < 2; ++rank) {
    ClientOptions options;
    options.endpoint = server_->endpoint();
    options.token = "tok";
    options.run_id = "run";
    options.machine_rank = rank;
    clients.push_back(*NewGrpcRendezvousClient(options));
  }
  auto join_all = [&]() {
    std::vector<absl::StatusOr<JoinResult>> results(2);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < 2; ++rank) {
      threads.emplace_back([&, rank] {
        JoinRequest request;
        request.run_id = "run";
        request.machine_rank = rank;
        request.num_machines = 2;
        results[rank] = clients[rank]->Join(request, absl::Now() + absl::Seconds(10));
      });
    }
    for (std::thread& t : threads) t.join();
    return results;
  };
  std::vector<absl::StatusOr<JoinResult>> first = join_all();
  ASSERT_TRUE(first[0].ok() && first[1].ok()) << first[0].status() << first[1].status();
  std::vector<absl::Notification> got(2);
  std::vector<Event> events(2);
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(clients[rank]
                    ->Watch(0,
                            [&, rank](const Event& e) {
                              events[rank] = e;
                              got[rank].Notify();
                            })
                    .ok());
  }
  EXPECT_EQ(clients[0]->Watch(0, [](const Event&) {}).code(),
            absl::StatusCode::kFailedPrecondition);
  RootCause cause;
  cause.machine_rank = 1;
  cause.rank = 1;
  cause.exit_code = 9;
  cause.message = "rank 1 exited with 9";
  ASSERT_TRUE(clients[1]->RequestRestart(0, cause).ok());
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(got[rank].WaitForNotificationWithTimeout(absl::Seconds(10)));
    EXPECT_EQ(events[rank].kind, Event::Kind::kRestart);
    EXPECT_EQ(events[rank].attempt, 1);
    EXPECT_EQ(events[rank].root_cause.message, "rank 1 exited with 9");
  }
  std::vector<absl::StatusOr<JoinResult>> second = join_all();
  ASSERT_TRUE(second[0].ok() && second[1].ok()) << second[0].status() << second[1].status();
  EXPECT_EQ(second[0]->attempt, 1);
  EXPECT_EQ(second[1]->store_namespace, "run/1");
  absl::Notification done;
  EXPECT_TRUE(clients[0]->Watch(1, [&](const Event&) { done.Notify(); }).ok());
  ASSERT_TRUE(clients[0]->ReportDone(1).ok());
  ASSERT_TRUE(clients[1]->ReportDone(1).ok());
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
}

// Machine 0 exits (its server shuts down) as soon as it sees "done"; machine 1 reported done
// but its watch reaches the server only now. It must read "done", not a lost server.
TEST_F(GrpcTest, AWatchThatArrivesWhileTheServerShutsDownAfterTheEndReadsDone) {
  std::vector<std::unique_ptr<RendezvousClient>> clients;
  std::vector<std::thread> joiners;
  std::vector<absl::StatusOr<JoinResult>> joined(2);
  for (int rank = 0; rank < 2; ++rank) {
    ClientOptions options;
    options.endpoint = server_->endpoint();
    options.token = "tok";
    options.run_id = "run";
    options.machine_rank = rank;
    clients.push_back(*NewGrpcRendezvousClient(options));
    joiners.emplace_back([&, rank, client = clients.back().get()] {
      JoinRequest request;
      request.run_id = "run";
      request.machine_rank = rank;
      request.num_machines = 2;
      joined[rank] = client->Join(request, absl::Now() + absl::Seconds(10));
    });
  }
  for (std::thread& t : joiners) t.join();
  ASSERT_TRUE(joined[0].ok() && joined[1].ok()) << joined[0].status() << joined[1].status();
  absl::Notification zero_done;
  ASSERT_TRUE(clients[0]->Watch(0, [&](const Event&) { zero_done.Notify(); }).ok());
  ASSERT_TRUE(clients[1]->ReportDone(0).ok());
  ASSERT_TRUE(clients[0]->ReportDone(0).ok());
  ASSERT_TRUE(zero_done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  const absl::Time shutdown_at = absl::Now();
  std::thread shutdown([&] { server_->Shutdown(absl::Seconds(5)); });
  absl::SleepFor(absl::Milliseconds(300));  // the shutdown has begun
  absl::Notification one_done;
  Event event;
  ASSERT_TRUE(clients[1]
                  ->Watch(0,
                          [&](const Event& e) {
                            event = e;
                            one_done.Notify();
                          })
                  .ok());
  ASSERT_TRUE(one_done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(event.kind, Event::Kind::kDone) << event.root_cause.message;
  shutdown.join();
  EXPECT_LT(absl::Now() - shutdown_at, absl::Seconds(3)) << "the shutdown waited past the watch";
}

}  // namespace
}  // namespace accel::rendezvous
