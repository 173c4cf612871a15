// JoinCoordinator: completion, timeouts, cancellation, loss, abort, done and restart, driven
// with explicit times (no threads, no sockets).
#include "rendezvous/join/coordinator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'000'000);

class RecordingSink : public JoinCoordinator::EventSink {
 public:
  void Send(const v1::Event& event) override { events.push_back(event); }
  void Close(const absl::Status& status) override { closes.push_back(status); }
  std::vector<v1::Event> events;
  std::vector<absl::Status> closes;
};

class CoordinatorTest : public ::testing::Test {
 protected:
  explicit CoordinatorTest(int machines = 3, int processes = 0) {
    options_.run_id = "r1";
    options_.num_machines = machines;
    options_.num_processes = processes;
    options_.rdzv_timeout = absl::Seconds(30);
    options_.liveness.heartbeat_interval = absl::Milliseconds(500);
    options_.liveness.missed_heartbeats_lost = 6;
    JoinCoordinator::Hooks hooks;
    hooks.store_port = [] { return 7000; };
    hooks.pick_master_port = [] { return absl::StatusOr<int>(29500); };
    hooks.attempt_over = [this](const std::string& ns) { over_.push_back(ns); };
    coordinator_ = std::make_unique<JoinCoordinator>(options_, std::move(hooks));
  }

  v1::JoinRequest Request(int rank, int local, const std::string& nonce = "") {
    v1::JoinRequest r;
    r.set_run_id("r1");
    r.set_machine_rank(rank);
    r.set_num_machines(options_.num_machines);
    r.set_num_processes(options_.num_processes);
    r.set_local_processes(local);
    r.set_hostname("host" + std::to_string(rank));
    r.add_addresses("10.0.0." + std::to_string(rank + 1));
    r.set_agent_nonce(nonce.empty() ? "nonce" + std::to_string(rank) : nonce);
    r.set_want_machines(true);
    return r;
  }

  // Joins and records the outcome in results_[rank].
  JoinCoordinator::Id Join(const v1::JoinRequest& r, absl::Time now = kT0) {
    const int rank = r.machine_rank();
    return coordinator_->Join(r, "ipv4:127.0.0.1:5000", now,
                              [this, rank](absl::StatusOr<v1::JoinResponse> result) {
                                results_[rank].push_back(std::move(result));
                              });
  }

  void JoinAll(const std::vector<int>& locals) {
    for (int rank = 0; rank < static_cast<int>(locals.size()); ++rank) {
      Join(Request(rank, locals[rank]));
    }
    for (int rank = 0; rank < static_cast<int>(locals.size()); ++rank) {
      ASSERT_EQ(results_[rank].size(), 1u);
      ASSERT_TRUE(results_[rank][0].ok()) << results_[rank][0].status();
    }
  }

  std::shared_ptr<RecordingSink> WatchAs(int rank, std::int64_t attempt = 0) {
    auto sink = std::make_shared<RecordingSink>();
    v1::WatchRequest w;
    w.set_run_id("r1");
    w.set_machine_rank(rank);
    w.set_attempt(attempt);
    w.set_machine_secret(SecretOf(rank));
    absl::StatusOr<JoinCoordinator::Id> id = coordinator_->Watch(w, sink);
    EXPECT_TRUE(id.ok()) << id.status();
    watch_ids_[rank] = id.ok() ? *id : 0;
    return sink;
  }

  absl::Status Report(int rank, v1::ReportRequest::Kind kind, const std::string& message = "",
                      std::int64_t attempt = 0) {
    v1::ReportRequest r;
    r.set_run_id("r1");
    r.set_machine_rank(rank);
    r.set_attempt(attempt);
    r.set_kind(kind);
    r.mutable_cause()->set_machine_rank(rank);
    r.mutable_cause()->set_message(message);
    r.set_machine_secret(SecretOf(rank));
    return coordinator_->Report(r, kT0);
  }

  // Returns `rank`'s machine secret from its last successful Join answer ("" without one).
  std::string SecretOf(int rank) {
    const auto& results = results_[rank];
    for (auto it = results.rbegin(); it != results.rend(); ++it) {
      if (it->ok()) return (*it)->machine_secret();
    }
    return "";
  }

  ServerOptions options_;
  std::unique_ptr<JoinCoordinator> coordinator_;
  std::map<int, std::vector<absl::StatusOr<v1::JoinResponse>>> results_;
  std::map<int, JoinCoordinator::Id> watch_ids_;
  std::vector<std::string> over_;
};

TEST_F(CoordinatorTest, CompletesWhenLastMachineJoinsWithPrefixSumRanks) {
  Join(Request(2, 2));
  Join(Request(0, 1));
  EXPECT_TRUE(results_.empty());  // still waiting
  Join(Request(1, 4));
  const std::vector<int> expected_base = {0, 1, 5};
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_EQ(results_[rank].size(), 1u);
    ASSERT_TRUE(results_[rank][0].ok()) << results_[rank][0].status();
    const v1::JoinResponse& r = *results_[rank][0];
    EXPECT_EQ(r.base_rank(), expected_base[rank]);
    EXPECT_EQ(r.world_size(), 7);
    EXPECT_EQ(r.attempt(), 0);
    EXPECT_EQ(r.master_addr(), "10.0.0.1");
    EXPECT_EQ(r.master_port(), 29500);
    EXPECT_EQ(r.store_endpoint(), "10.0.0.1:7000");
    EXPECT_EQ(r.store_namespace(), "r1/0");
    ASSERT_EQ(r.machines_size(), 3);
    EXPECT_EQ(r.machines(2).hostname(), "host2");
    EXPECT_EQ(r.machines(2).base_rank(), 5);
    EXPECT_EQ(r.machines(1).local_processes(), 4);
  }
}

TEST_F(CoordinatorTest, MachineListOnlyForThoseWhoAskForIt) {
  v1::JoinRequest quiet = Request(1, 1);
  quiet.set_want_machines(false);
  Join(Request(0, 1));
  Join(quiet);
  Join(Request(2, 1));
  EXPECT_EQ(results_[0][0]->machines_size(), 3);
  EXPECT_EQ(results_[1][0]->machines_size(), 0);
  EXPECT_EQ(results_[1][0]->base_rank(), 1);
}

TEST_F(CoordinatorTest, TheDefaultAnswerIsTheCallersOwnEntryWithoutTheList) {
  for (int rank = 0; rank < 3; ++rank) {
    v1::JoinRequest r = Request(rank, rank + 1);
    r.set_want_machines(false);
    Join(r);
  }
  std::set<std::string> secrets;
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(results_[rank][0].ok()) << results_[rank][0].status();
    const v1::JoinResponse& r = *results_[rank][0];
    EXPECT_EQ(r.machines_size(), 0);
    EXPECT_EQ(r.self().machine_rank(), rank);
    EXPECT_EQ(r.self().address(), "10.0.0." + std::to_string(rank + 1));
    EXPECT_EQ(r.self().base_rank(), rank == 0 ? 0 : rank == 1 ? 1 : 3);
    EXPECT_EQ(r.self().local_processes(), rank + 1);
    EXPECT_EQ(r.run_id(), "r1");
    EXPECT_EQ(r.machine_secret().size(), 32u);
    secrets.insert(r.machine_secret());
  }
  EXPECT_EQ(secrets.size(), 3u);
}

TEST_F(CoordinatorTest, AJoinWithoutARunIdJoinsTheServersRun) {
  for (int rank = 0; rank < 3; ++rank) {
    v1::JoinRequest r = Request(rank, 1);
    if (rank > 0) r.clear_run_id();
    Join(r);
  }
  ASSERT_TRUE(results_[2][0].ok()) << results_[2][0].status();
  EXPECT_EQ(results_[2][0]->run_id(), "r1");
  v1::JoinRequest wrong = Request(0, 1, "other");
  wrong.set_run_id("r2");
  Join(wrong);
  EXPECT_THAT(results_[0].back().status().message(), HasSubstr("run id mismatch"));
}

TEST_F(CoordinatorTest, OnlyAMachinesOwnAgentCanReportWatchOrHeartbeatForIt) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  // A client with the token but not machine 1's secret (another machine, or a third party).
  v1::ReportRequest forged;
  forged.set_run_id("r1");
  forged.set_machine_rank(1);
  forged.set_kind(v1::ReportRequest::FAILURE);
  forged.mutable_cause()->set_exit_code(42);
  for (const std::string& secret : {std::string(), SecretOf(2), SecretOf(1).substr(1)}) {
    forged.set_machine_secret(secret);
    const absl::Status status = coordinator_->Report(forged, kT0);
    EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
    EXPECT_THAT(status.message(), HasSubstr("machine_rank 1: the call does not carry"));
  }
  v1::HeartbeatRequest hb;
  hb.set_run_id("r1");
  hb.set_machine_rank(1);
  hb.set_machine_secret(SecretOf(2));
  EXPECT_EQ(coordinator_->Heartbeat(hb, kT0).code(), absl::StatusCode::kPermissionDenied);
  v1::WatchRequest w;
  w.set_run_id("r1");
  w.set_machine_rank(1);
  EXPECT_EQ(coordinator_->Watch(w, std::make_shared<RecordingSink>()).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(s0->events.empty());  // nothing was aborted
  // A machine's own report names that machine, whatever its cause says.
  v1::ReportRequest own;
  own.set_run_id("r1");
  own.set_machine_rank(2);
  own.set_kind(v1::ReportRequest::FAILURE);
  own.set_machine_secret(SecretOf(2));
  own.mutable_cause()->set_machine_rank(0);
  ASSERT_TRUE(coordinator_->Report(own, kT0).ok());
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_EQ(s0->events[0].root_cause().machine_rank(), 2);
}

TEST_F(CoordinatorTest, DuplicateRankFailsEveryWaitingMachineWithTheReasonAtOnce) {
  Join(Request(0, 1));
  Join(Request(1, 1, "agent-a"));
  Join(Request(1, 1, "agent-b"));
  ASSERT_EQ(results_[1].size(), 2u);
  const std::string duplicate =
      "duplicate machine_rank 1: machine_rank 1 (host host1, address 10.0.0.2) and machine_rank 1 "
      "(host host1, address 10.0.0.2) both joined; give each machine its own machine_rank";
  // The refused machine hears why.
  EXPECT_EQ(results_[1][1].status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(results_[1][1].status().message(), "join rendezvous run_id=r1: " + duplicate);
  // So do the machines that were waiting (machine 0 among them): the attempt cannot complete.
  for (const auto& result : {results_[0][0], results_[1][0]}) {
    EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(result.status().message(),
              "join rendezvous run_id=r1: machine_rank 1 (host host1, address 10.0.0.2) was "
              "refused, so this attempt cannot complete: " +
                  duplicate);
  }
}

TEST_F(CoordinatorTest, AJoinWithoutTheTokenIsNamedAtTheTimeoutButEndsNothing) {
  Join(Request(0, 1), kT0);
  v1::JoinRequest stranger = Request(1, 1);
  stranger.set_hostname("evil\nhost");
  const std::string why =
      "join rendezvous from ipv4:10.9.9.9:4242: the rendezvous token is wrong (set "
      "rdzv_token_file or ACCEL_RDZV_TOKEN to the job's token)";
  EXPECT_TRUE(coordinator_->NoteRefusedJoin(stranger, "ipv4:10.9.9.9:4242", why));
  EXPECT_FALSE(coordinator_->NoteRefusedJoin(stranger, "ipv4:10.9.9.9:4242", why));  // once
  for (int i = 0; i < 10; ++i) {
    coordinator_->NoteRefusedJoin(Request(2, i + 1), "ipv4:10.9.9.9:" + std::to_string(i), why);
  }
  EXPECT_TRUE(results_.empty());  // anyone can be refused: machine 0 keeps waiting
  coordinator_->Tick(kT0 + absl::Seconds(30));
  ASSERT_EQ(results_[0].size(), 1u);
  const std::string message(results_[0][0].status().message());
  EXPECT_THAT(message,
              HasSubstr("missing machine_rank 1, 2; refused: a join claiming machine_rank 1 "
                        "(host evil?host) from 10.9.9.9: the rendezvous token is wrong (set "
                        "rdzv_token_file or ACCEL_RDZV_TOKEN to the job's token); a join"));
  EXPECT_EQ(message.find("ipv4:10.9.9.9:3"), std::string::npos);  // at most four are kept
}

TEST_F(CoordinatorTest, DuplicateRankAfterCompletionIsRefused) {
  JoinAll({1, 1, 1});
  Join(Request(2, 1, "intruder"));
  ASSERT_EQ(results_[2].size(), 2u);
  EXPECT_THAT(results_[2][1].status().message(), HasSubstr("duplicate machine_rank 2"));
}

TEST_F(CoordinatorTest, RetryFromSameAgentReplacesItsEarlierJoin) {
  Join(Request(1, 1, "agent-a"));
  Join(Request(1, 1, "agent-a"));
  ASSERT_EQ(results_[1].size(), 1u);
  EXPECT_EQ(results_[1][0].status().code(), absl::StatusCode::kAborted);
  Join(Request(0, 1));
  Join(Request(2, 1));
  ASSERT_EQ(results_[1].size(), 2u);
  EXPECT_TRUE(results_[1][1].ok());
}

TEST_F(CoordinatorTest, TimeoutFailsEveryWaitingMachineExactlyAtTheDeadline) {
  Join(Request(0, 1), kT0);
  Join(Request(2, 1), kT0 + absl::Seconds(10));
  EXPECT_EQ(coordinator_->Tick(kT0 + absl::Seconds(29)), kT0 + absl::Seconds(30));
  EXPECT_TRUE(results_.empty());
  coordinator_->Tick(kT0 + absl::Seconds(30));
  const std::string expected =
      "join rendezvous run_id=r1 attempt=0: timed out after 30s with 2 of 3 machines joined; "
      "arrived: machine_rank 0 (host host0, address 10.0.0.1), machine_rank 2 (host host2, "
      "address 10.0.0.3); missing machine_rank 1";
  for (int rank : {0, 2}) {
    ASSERT_EQ(results_[rank].size(), 1u);
    EXPECT_EQ(results_[rank][0].status().code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_EQ(results_[rank][0].status().message(), expected);
  }
  EXPECT_EQ(coordinator_->Tick(kT0 + absl::Seconds(31)), absl::InfiniteFuture());
}

TEST_F(CoordinatorTest, CancelledJoinLeavesAndItsRankCanJoinAgain) {
  const JoinCoordinator::Id id = Join(Request(1, 1, "agent-a"));
  coordinator_->CancelJoin(id);
  ASSERT_EQ(results_[1].size(), 1u);
  EXPECT_EQ(results_[1][0].status().code(), absl::StatusCode::kCancelled);
  Join(Request(1, 1, "agent-b"));  // a restarted agent: not a duplicate
  Join(Request(0, 1));
  Join(Request(2, 1));
  ASSERT_EQ(results_[1].size(), 2u);
  EXPECT_TRUE(results_[1][1].ok());
}

TEST_F(CoordinatorTest, MissingHeartbeatsAbortEveryWatcher) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  auto s1 = WatchAs(1);
  auto s2 = WatchAs(2);
  v1::HeartbeatRequest hb;
  hb.set_run_id("r1");
  hb.set_attempt(0);
  for (int rank : {0, 1}) {
    hb.set_machine_rank(rank);
    hb.set_machine_secret(SecretOf(rank));
    ASSERT_TRUE(coordinator_->Heartbeat(hb, kT0 + absl::Seconds(2)).ok());
  }
  coordinator_->Tick(kT0 + absl::Milliseconds(2999));
  EXPECT_TRUE(s0->events.empty());
  coordinator_->Tick(kT0 + absl::Seconds(3));  // machine 2 silent for 6 × 500 ms
  for (auto& sink : {s0, s1, s2}) {
    ASSERT_EQ(sink->events.size(), 1u);
    EXPECT_EQ(sink->events[0].kind(), v1::Event::ABORT);
    EXPECT_EQ(sink->events[0].root_cause().machine_rank(), 2);
    EXPECT_EQ(sink->events[0].root_cause().message(),
              "machine 2 lost: no heartbeat for 3.0 s (host host2, address 10.0.0.3)");
    EXPECT_EQ(sink->events[0].root_cause().rank(), -1);
  }
  Join(Request(0, 1, "late"));
  EXPECT_EQ(results_[0].back().status().code(), absl::StatusCode::kAborted);
}

// Machines that give a probe port (every real agent does) are judged by join/liveness.h.
class ProbedCoordinatorTest : public CoordinatorTest {
 protected:
  void JoinProbed() {
    for (int rank = 0; rank < 3; ++rank) {
      v1::JoinRequest r = Request(rank, 1);
      r.set_probe_port(40000 + rank);
      Join(r);
    }
    for (int rank = 0; rank < 3; ++rank) ASSERT_TRUE(results_[rank].at(0).ok());
  }
  void HeartbeatFrom(int rank, absl::Time at) {
    v1::HeartbeatRequest hb;
    hb.set_run_id("r1");
    hb.set_machine_rank(rank);
    hb.set_machine_secret(SecretOf(rank));
    ASSERT_TRUE(coordinator_->Heartbeat(hb, at).ok());
  }
  // Every machine but `silent` heartbeats every 500 ms up to `until`; machine `silent`'s host
  // answers probes or not; the coordinator ticks every 100 ms.
  void Run(int silent, bool host_answers, absl::Duration until) {
    for (absl::Duration t = absl::ZeroDuration(); t <= until; t += absl::Milliseconds(100)) {
      const absl::Time now = kT0 + t;
      if (t % absl::Milliseconds(500) == absl::ZeroDuration()) {
        for (int rank = 0; rank < 3; ++rank) {
          if (rank != silent) HeartbeatFrom(rank, now);
        }
      }
      coordinator_->Tick(now);
      for (const ProbeTarget& target : coordinator_->ProbeTargets(now)) {
        probed_.insert(target.key);
        EXPECT_EQ(target.host, "10.0.0." + std::to_string(target.key + 1));
        EXPECT_EQ(target.port, 40000 + target.key);
        coordinator_->ProbeResult(target.key, now, host_answers, now + absl::Milliseconds(50));
        if (control_answers_) coordinator_->ControlResult(now, true, now + absl::Milliseconds(60));
      }
    }
  }
  std::set<int> probed_;
  bool control_answers_ = true;  // the server's own port answers its control probes
};

TEST_F(ProbedCoordinatorTest, ABusyMachineWhoseHostAnswersIsNotLost) {
  JoinProbed();
  auto s0 = WatchAs(0);
  Run(/*silent=*/2, /*host_answers=*/true, absl::Seconds(29.9));
  EXPECT_TRUE(s0->events.empty());
  EXPECT_EQ(probed_, std::set<int>{2});
  Run(2, true, absl::Seconds(30));
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_THAT(s0->events[0].root_cause().message(),
              HasSubstr("machine 2 lost: no heartbeat for 30.0 s although its host answers"));
}

TEST_F(ProbedCoordinatorTest, ASilentMachineWhoseHostDoesNotAnswerIsLostInThreeSeconds) {
  JoinProbed();
  auto s0 = WatchAs(0);
  Run(/*silent=*/1, /*host_answers=*/false, absl::Seconds(2.9));
  EXPECT_TRUE(s0->events.empty());
  Run(1, false, absl::Seconds(3.0));
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_EQ(s0->events[0].root_cause().message(),
            "machine 1 lost: no heartbeat for 3.0 s and its host does not answer (no answer to "
            "probes for 1.5 s) (host host1, address 10.0.0.2)");
}

// A server too starved to complete even a handshake with itself blames nobody for the silence.
TEST_F(ProbedCoordinatorTest, UnansweredProbesBlameNobodyWhileTheControlDoesNotAnswer) {
  JoinProbed();
  auto s0 = WatchAs(0);
  control_answers_ = false;
  Run(/*silent=*/1, /*host_answers=*/false, absl::Seconds(29.9));
  EXPECT_TRUE(s0->events.empty());
  coordinator_->ControlResult(kT0 + absl::Seconds(29.8), true, kT0 + absl::Seconds(29.95));
  ASSERT_EQ(s0->events.size(), 1u);  // now the unanswered attempts count
  EXPECT_THAT(s0->events[0].root_cause().message(),
              HasSubstr("machine 1 lost: no heartbeat for 29.9 s and its host does not answer"));
}

TEST_F(ProbedCoordinatorTest, ALateHeartbeatLossNeverReplacesTheFirstFailure) {
  JoinProbed();
  auto s0 = WatchAs(0);
  ASSERT_TRUE(Report(1, v1::ReportRequest::FAILURE, "rank 1: signal 9").ok());
  Run(/*silent=*/2, /*host_answers=*/false, absl::Seconds(40));
  coordinator_->ProbeResult(2, kT0 + absl::Seconds(41), false, kT0 + absl::Seconds(42));
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_EQ(s0->events[0].root_cause().message(), "rank 1: signal 9");
  EXPECT_TRUE(probed_.empty());  // nothing is probed once the attempt has ended
  EXPECT_EQ(WatchAs(2)->events.at(0).root_cause().message(), "rank 1: signal 9");
}

TEST_F(CoordinatorTest, BrokenWatchAbortsTheOthers) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  auto s1 = WatchAs(1);
  WatchAs(2);
  coordinator_->WatchBroken(watch_ids_[1], kT0);
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_EQ(s0->events[0].kind(), v1::Event::ABORT);
  EXPECT_EQ(s0->events[0].root_cause().message(),
            "machine 1 lost: its connection to the rendezvous server closed (host host1, "
            "address 10.0.0.2)");
  EXPECT_TRUE(s1->events.empty());  // its stream is gone
  auto late = WatchAs(1);           // a watch after the abort gets it at once
  ASSERT_EQ(late->events.size(), 1u);
  EXPECT_EQ(late->events[0].kind(), v1::Event::ABORT);
}

TEST_F(CoordinatorTest, FirstFailureIsTheRootCause) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  ASSERT_TRUE(Report(2, v1::ReportRequest::FAILURE, "rank 2 exited with 3").ok());
  ASSERT_TRUE(Report(1, v1::ReportRequest::FAILURE, "rank 1 got SIGTERM").ok());
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_EQ(s0->events[0].root_cause().message(), "rank 2 exited with 3");
  auto s1 = WatchAs(1);
  EXPECT_EQ(s1->events[0].root_cause().message(), "rank 2 exited with 3");
}

TEST_F(CoordinatorTest, DoneWhenEveryMachineReportsDone) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  auto s2 = WatchAs(2);
  ASSERT_TRUE(Report(0, v1::ReportRequest::DONE).ok());
  ASSERT_TRUE(Report(1, v1::ReportRequest::DONE).ok());
  coordinator_->WatchBroken(watch_ids_[0], kT0);  // a finished machine leaving is no loss
  EXPECT_TRUE(s2->events.empty());
  ASSERT_TRUE(Report(2, v1::ReportRequest::DONE).ok());
  ASSERT_EQ(s2->events.size(), 1u);
  EXPECT_EQ(s2->events[0].kind(), v1::Event::DONE);
}

TEST_F(CoordinatorTest, AMachineWhoseWatchComesAfterTheEndIsAwaitedBeforeShutdown) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  auto s1 = WatchAs(1);
  EXPECT_TRUE(coordinator_->AwaitTerminalSent(kT0));  // running: nothing to wait for
  for (int rank : {0, 1, 2}) ASSERT_TRUE(Report(rank, v1::ReportRequest::DONE).ok());
  // Machine 2 reported done before its watch reached the server: it is still owed "done".
  EXPECT_FALSE(coordinator_->AwaitTerminalSent(absl::Now() + absl::Milliseconds(20)));
  auto s2 = WatchAs(2);
  ASSERT_EQ(s2->events.size(), 1u);
  EXPECT_EQ(s2->events[0].kind(), v1::Event::DONE);
  EXPECT_TRUE(coordinator_->AwaitTerminalSent(absl::Now() + absl::Seconds(5)));
}

TEST_F(CoordinatorTest, ALostMachineIsOwedNoEventButTheOthersAre) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  auto s1 = WatchAs(1);
  v1::HeartbeatRequest hb;
  hb.set_run_id("r1");
  for (int rank : {0, 1}) {
    hb.set_machine_rank(rank);
    hb.set_machine_secret(SecretOf(rank));
    ASSERT_TRUE(coordinator_->Heartbeat(hb, kT0 + absl::Seconds(2)).ok());
  }
  coordinator_->Tick(kT0 + absl::Seconds(3));  // machine 2, never heard from, is lost
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_EQ(s0->events[0].root_cause().machine_rank(), 2);
  EXPECT_TRUE(coordinator_->AwaitTerminalSent(absl::Now()));
}

TEST_F(CoordinatorTest, AMachineThatFailedIsOwedTheAbortItCaused) {
  JoinAll({1, 1, 1});
  WatchAs(0);
  WatchAs(2);
  ASSERT_TRUE(Report(1, v1::ReportRequest::FAILURE, "rank 1 exited with 3").ok());
  EXPECT_FALSE(coordinator_->AwaitTerminalSent(absl::Now() + absl::Milliseconds(20)));
  WatchAs(1);
  EXPECT_TRUE(coordinator_->AwaitTerminalSent(absl::Now()));
}

TEST_F(CoordinatorTest, RestartStartsTheNextAttempt) {
  JoinAll({1, 1, 1});
  auto s0 = WatchAs(0);
  ASSERT_TRUE(Report(1, v1::ReportRequest::RESTART, "rank 1 died").ok());
  ASSERT_TRUE(Report(2, v1::ReportRequest::RESTART, "again").ok());  // same attempt: ignored
  ASSERT_EQ(s0->events.size(), 1u);
  EXPECT_EQ(s0->events[0].kind(), v1::Event::RESTART);
  EXPECT_EQ(s0->events[0].attempt(), 1);
  EXPECT_EQ(over_, std::vector<std::string>{"r1/0"});
  auto stale = WatchAs(2, 0);  // an agent still on attempt 0 learns of the restart and why
  ASSERT_EQ(stale->events.size(), 1u);
  EXPECT_EQ(stale->events[0].kind(), v1::Event::RESTART);
  EXPECT_EQ(stale->events[0].attempt(), 1);
  EXPECT_EQ(stale->events[0].root_cause().message(), "rank 1 died");
  results_.clear();
  JoinAll({1, 1, 1});
  EXPECT_EQ(results_[0][0]->attempt(), 1);
  EXPECT_EQ(results_[0][0]->store_namespace(), "r1/1");
}

TEST_F(CoordinatorTest, ShutdownFailsWaitersAndClosesWatches) {
  Join(Request(0, 1));
  coordinator_->Shutdown();
  ASSERT_EQ(results_[0].size(), 1u);
  EXPECT_EQ(results_[0][0].status().code(), absl::StatusCode::kUnavailable);
  Join(Request(1, 1));
  EXPECT_EQ(results_[1][0].status().code(), absl::StatusCode::kUnavailable);
}

class CoordinatorProcessesTest : public CoordinatorTest {
 protected:
  CoordinatorProcessesTest() : CoordinatorTest(2, 4) {}
};

TEST_F(CoordinatorProcessesTest, TotalProcessesMustMatchNumProcesses) {
  Join(Request(0, 2));
  Join(Request(1, 3));
  for (int rank : {0, 1}) {
    ASSERT_EQ(results_[rank].size(), 1u);
    EXPECT_EQ(results_[rank][0].status().message(),
              "join rendezvous run_id=r1: num_processes mismatch: the machines run 5 processes "
              "in total (machine_rank 0 (host host0, address 10.0.0.1) runs 2, machine_rank 1 "
              "(host host1, address 10.0.0.2) runs 3) but num_processes=4");
  }
}

TEST_F(CoordinatorProcessesTest, VersionWarningReachesEveryMachine) {
  v1::JoinRequest a = Request(0, 2);
  a.set_accel_version("0.1.0");
  v1::JoinRequest b = Request(1, 2);
  b.set_accel_version("0.2.0");
  Join(a);
  Join(b);
  ASSERT_TRUE(results_[0][0].ok());
  ASSERT_EQ(results_[0][0]->warnings_size(), 1);
  EXPECT_THAT(results_[0][0]->warnings(0), HasSubstr("accel-launch 0.2.0 vs 0.1.0"));
  EXPECT_EQ(results_[1][0]->warnings_size(), 1);
}

class FingerprintMismatchTest : public CoordinatorProcessesTest {
 protected:
  // Machines 0 and 1 join with different mixed_precision, machine 0 first or second. Machine 0's
  // config is the job's whichever reaches the server first: machine 1 is the one refused, and
  // machine 0 learns which key differs at once (the netns agent test once saw the roles swap
  // when machine 1 won the race).
  void ExpectMachineOneRefused(bool machine_zero_first) {
    v1::JoinRequest zero = Request(0, 2);
    (*zero.mutable_config_fingerprint())["mixed_precision"] = "fp16";
    v1::JoinRequest one = Request(1, 2);
    (*one.mutable_config_fingerprint())["mixed_precision"] = "no";
    Join(machine_zero_first ? zero : one);
    Join(machine_zero_first ? one : zero);
    const std::string reason =
        "config fingerprint mismatch: machine_rank 1 (host host1, address 10.0.0.2) and "
        "machine_rank 0 (host host0, address 10.0.0.1) differ in mixed_precision";
    ASSERT_EQ(results_[1].size(), 1u);
    EXPECT_EQ(results_[1][0].status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(results_[1][0].status().message(), "join rendezvous run_id=r1: " + reason);
    ASSERT_EQ(results_[0].size(), 1u);
    EXPECT_EQ(results_[0][0].status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(results_[0][0].status().message(),
              "join rendezvous run_id=r1: machine_rank 1 (host host1, address 10.0.0.2) was "
              "refused, so this attempt cannot complete: " +
                  reason);
  }
};

TEST_F(FingerprintMismatchTest, MachineOneJoiningAfterMachineZeroIsRefused) {
  ExpectMachineOneRefused(/*machine_zero_first=*/true);
}

TEST_F(FingerprintMismatchTest, MachineOneJoiningBeforeMachineZeroIsRefused) {
  ExpectMachineOneRefused(/*machine_zero_first=*/false);
}

}  // namespace
}  // namespace accel::rendezvous
