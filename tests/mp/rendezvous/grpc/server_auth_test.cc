// The rendezvous server's authentication over real gRPC on a Unix socket (token in metadata; TCP
// and its TLS from the token: transport_test.cc): wrong or missing tokens,
// a raw client without the token, reports in another machine's name, and TLS.
#include "tests/mp/rendezvous/grpc/grpc_fixture.h"
#include "tests/testing/skip.h"

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;
using testing_grpc::GrpcTest;

TEST_F(GrpcTest, WrongOrMissingTokenIsUnauthenticated) {
  auto wrong = Connect("run/0", "nope");
  absl::Status status = wrong->Set("k", "v");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(status.message(), HasSubstr("store set from unix:"));
  EXPECT_THAT(status.message(), HasSubstr("the rendezvous token is wrong"));
  auto none = Connect("run/0", "");
  EXPECT_THAT(none->Get("k", absl::ZeroDuration()).status().message(),
              HasSubstr("no rendezvous token was sent"));
}

// A third party that reaches the port with a plain gRPC client, without the token (or with a
// wrong one), can neither read nor write the store, nor join, watch, heartbeat or report.
TEST_F(GrpcTest, ARawClientWithoutTheTokenIsRefusedEverything) {
  ChannelOptions channel_options;
  channel_options.endpoint = server_->endpoint();
  auto channel = MakeChannel(channel_options);
  ASSERT_TRUE(channel.ok());
  auto store = v1::Store::NewStub(*channel);
  auto rendezvous = v1::Rendezvous::NewStub(*channel);
  ASSERT_TRUE(Connect()->Set("secret", "42").ok());
  for (const std::string token : {"", "wrong"}) {
    SCOPED_TRACE("token \"" + token + "\"");
    auto context = [&] {
      auto c = std::make_unique<grpc::ClientContext>();
      PrepareContext(*c, token, absl::Now() + absl::Seconds(5));
      return c;
    };
    v1::SetRequest set;
    set.set_ns("run/0");
    set.set_key("secret");
    set.set_value("forged");
    v1::Ack ack;
    EXPECT_EQ(store->Set(context().get(), set, &ack).error_code(), grpc::UNAUTHENTICATED);
    v1::GetRequest get;
    get.set_ns("run/0");
    get.set_key("secret");
    v1::GetResponse got;
    EXPECT_EQ(store->Get(context().get(), get, &got).error_code(), grpc::UNAUTHENTICATED);
    EXPECT_EQ(got.value(), "");
    v1::JoinRequest join;
    join.set_run_id("run");
    join.set_num_machines(2);
    join.set_local_processes(1);
    v1::JoinResponse joined;
    EXPECT_EQ(rendezvous->Join(context().get(), join, &joined).error_code(), grpc::UNAUTHENTICATED);
    v1::ReportRequest report;
    report.set_run_id("run");
    report.set_machine_rank(1);
    report.set_kind(v1::ReportRequest::FAILURE);
    report.mutable_cause()->set_exit_code(42);
    EXPECT_EQ(rendezvous->Report(context().get(), report, &ack).error_code(),
              grpc::UNAUTHENTICATED);
    v1::HeartbeatRequest heartbeat;
    heartbeat.set_run_id("run");
    EXPECT_EQ(rendezvous->Heartbeat(context().get(), heartbeat, &ack).error_code(),
              grpc::UNAUTHENTICATED);
    v1::WatchRequest watch;
    watch.set_run_id("run");
    auto c = context();
    auto reader = rendezvous->Watch(c.get(), watch);
    v1::Event event;
    EXPECT_FALSE(reader->Read(&event));
    EXPECT_EQ(reader->Finish().error_code(), grpc::UNAUTHENTICATED);
  }
  EXPECT_EQ(*Connect()->Get("secret", absl::ZeroDuration()), "42");
}

// A client with the token but not machine 1's secret (a third party who stole the token, or
// another machine) cannot abort the job in machine 1's name: the attacker's exit code 42 never
// reaches anyone.
TEST_F(GrpcTest, AReportInAnotherMachinesNameIsRefused) {
  std::vector<std::unique_ptr<RendezvousClient>> clients;
  std::vector<absl::StatusOr<JoinResult>> joined(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    ClientOptions options;
    options.endpoint = server_->endpoint();
    options.token = "tok";
    options.machine_rank = rank;  // no run_id: learned from the Join answer
    clients.push_back(*NewGrpcRendezvousClient(options));
  }
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      JoinRequest request;
      request.machine_rank = rank;
      request.num_machines = 2;
      joined[rank] = clients[rank]->Join(request, absl::Now() + absl::Seconds(10));
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(joined[0].ok() && joined[1].ok()) << joined[0].status() << joined[1].status();
  EXPECT_EQ(joined[0]->run_id, "run");
  EXPECT_NE(joined[0]->machine_secret, joined[1]->machine_secret);
  absl::Notification got;
  Event event;
  ASSERT_TRUE(clients[0]
                  ->Watch(0,
                          [&](const Event& e) {
                            event = e;
                            got.Notify();
                          })
                  .ok());
  ChannelOptions channel_options;
  channel_options.endpoint = server_->endpoint();
  auto rendezvous = v1::Rendezvous::NewStub(*MakeChannel(channel_options));
  v1::ReportRequest forged;
  forged.set_run_id("run");
  forged.set_machine_rank(1);
  forged.set_kind(v1::ReportRequest::FAILURE);
  forged.mutable_cause()->set_exit_code(42);
  forged.set_machine_secret(joined[0]->machine_secret);  // machine 0's, not machine 1's
  grpc::ClientContext context;
  PrepareContext(context, "tok", absl::Now() + absl::Seconds(5));
  v1::Ack ack;
  const grpc::Status status = rendezvous->Report(&context, forged, &ack);
  EXPECT_EQ(status.error_code(), grpc::PERMISSION_DENIED) << status.error_message();
  EXPECT_FALSE(got.WaitForNotificationWithTimeout(absl::Milliseconds(500)));
  RootCause cause;
  cause.exit_code = 7;
  ASSERT_TRUE(clients[1]->ReportFailure(0, cause).ok());  // machine 1 itself may
  ASSERT_TRUE(got.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(event.kind, Event::Kind::kAbort);
  EXPECT_EQ(event.root_cause.machine_rank, 1);
  EXPECT_EQ(event.root_cause.exit_code, 7);
  clients[0]->StopWatch();
}

TEST(GrpcTlsTest, TlsServerServesTlsClientsAndRefusesPlaintext) {
  const std::string dir = ::testing::TempDir() + "/rdzv_tls_" + std::to_string(::getpid());
  const std::string command =
      "mkdir -p " + dir + " && timeout 60 openssl req -x509 -newkey rsa:2048 -nodes -days 1 " +
      "-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " + dir +
      "/key.pem -out " + dir + "/cert.pem >/dev/null 2>&1";
  if (std::system(command.c_str()) != 0) {
    ACCEL_SKIP_OR_FAIL("openssl cannot make a test certificate");
  }
  ServerOptions options;
  options.run_id = "run";
  options.token = "tok";
  options.tls_cert_path = dir + "/cert.pem";
  options.tls_key_path = dir + "/key.pem";
  auto server = RendezvousServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  StoreClientOptions tls;
  tls.tls_ca_path = dir + "/cert.pem";
  tls.connect_timeout = absl::Seconds(5);
  auto secure = ConnectStore((*server)->endpoint(), "tok", "run/0", tls);
  ASSERT_TRUE(secure.ok()) << secure.status();
  EXPECT_TRUE((*secure)->Set("k", "v").ok());
  EXPECT_EQ(*(*secure)->Get("k", absl::ZeroDuration()), "v");
  StoreClientOptions plain;
  plain.connect_timeout = absl::Seconds(2);
  plain.rpc_deadline = absl::Seconds(2);
  // Plaintext (no token, no TLS) is refused. A client with the token but without tls_ca_file
  // is served (transport v2: it proves the token with its certificate and checks the server's
  // proof on every reply, token_tls.h; it does not check the user's certificate).
  auto insecure = ConnectStore((*server)->endpoint(), "", "run/0", plain);
  ASSERT_TRUE(insecure.ok());
  EXPECT_FALSE((*insecure)->Set("k", "x").ok());
  EXPECT_EQ(*(*secure)->Get("k", absl::ZeroDuration()), "v");
  auto token_only = ConnectStore((*server)->endpoint(), "tok", "run/0", plain);
  ASSERT_TRUE(token_only.ok());
  EXPECT_EQ(token_only.value()->Get("k", absl::ZeroDuration()).value_or(""), "v");
  std::system(("rm -rf " + dir).c_str());
}

TEST(GrpcTlsTest, MissingCertificateIsAClearStartError) {
  ServerOptions options;
  options.tls_cert_path = "/nonexistent/cert.pem";
  options.tls_key_path = "/nonexistent/key.pem";
  auto server = RendezvousServer::Start(options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(server.status().message(),
              HasSubstr("start rendezvous server: rendezvous TLS certificate (tls_cert_file): "
                        "open /nonexistent/cert.pem"));
}

}  // namespace
}  // namespace accel::rendezvous
