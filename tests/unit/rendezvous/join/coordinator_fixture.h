// The JoinCoordinator test fixture: a coordinator driven with explicit times (no threads, no
// sockets), joins and watches recorded per machine rank. Shared by coordinator_*_test.cc.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rendezvous/join/coordinator.h"

namespace accel::rendezvous::testing_join {

using ::testing::HasSubstr;

inline const absl::Time kT0 = absl::FromUnixSeconds(1'000'000);

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

}  // namespace accel::rendezvous::testing_join
