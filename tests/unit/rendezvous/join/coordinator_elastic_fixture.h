// The elastic JoinCoordinator test fixture: a coordinator with ServerOptions::elastic driven with
// explicit times, each machine's join answer, watch and secret recorded by machine rank. Shared by
// coordinator_elastic_test.cc and coordinator_eviction_test.cc.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rendezvous/join/coordinator.h"

namespace accel::rendezvous::testing_elastic {

inline const absl::Time kT0 = absl::FromUnixSeconds(1'000'000);

class Sink : public JoinCoordinator::EventSink {
 public:
  void Send(const v1::Event& event) override { events.push_back(event); }
  void Close(const absl::Status& status) override { closes.push_back(status); }
  std::vector<v1::Event> events;
  std::vector<absl::Status> closes;
};

class ElasticTest : public ::testing::Test {
 protected:
  void Start(int min, int max, int max_restarts) {
    options_.run_id = "r1";
    options_.num_machines = max;
    options_.num_processes = 2 * max;
    options_.rdzv_timeout = absl::Seconds(30);
    options_.elastic.enabled = true;
    options_.elastic.min_machines = min;
    options_.elastic.last_call = absl::Seconds(1);
    options_.elastic.survivor_wait = absl::Seconds(3);
    options_.elastic.max_restarts = max_restarts;
    JoinCoordinator::Hooks hooks;
    hooks.store_port = [] { return 7000; };
    hooks.pick_master_port = [this] { return absl::StatusOr<int>(29500 + ports_++); };
    coordinator_ = std::make_unique<JoinCoordinator>(options_, std::move(hooks));
  }

  void Join(int rank, absl::Time now, const std::string& precision = "no") {
    v1::JoinRequest r;
    r.set_run_id("r1");
    r.set_machine_rank(rank);
    r.set_num_machines(options_.num_machines);
    r.set_num_processes(options_.num_processes);
    r.set_local_processes(2);
    r.set_hostname("host" + std::to_string(rank));
    r.add_addresses("10.0.0." + std::to_string(rank + 1));
    (*r.mutable_config_fingerprint())["mixed_precision"] = precision;
    r.set_agent_nonce("nonce" + std::to_string(rank) + "-" + std::to_string(joins_++));
    coordinator_->Join(
        r, "ipv4:127.0.0.1:5000", now,
        [this, rank](absl::StatusOr<v1::JoinResponse> result) { last_[rank] = std::move(result); });
  }

  // Returns `rank`'s answer and forgets it (nullopt while its Join waits).
  std::optional<absl::StatusOr<v1::JoinResponse>> Take(int rank) {
    auto it = last_.find(rank);
    if (it == last_.end()) return std::nullopt;
    auto result = std::move(it->second);
    last_.erase(it);
    return result;
  }

  // Takes `rank`'s successful answer and opens its watch.
  v1::JoinResponse Joined(int rank) {
    auto result = Take(rank);
    EXPECT_TRUE(result.has_value()) << "machine " << rank << " still waits";
    if (!result.has_value()) return {};
    EXPECT_TRUE(result->ok()) << result->status();
    if (!result->ok()) return {};
    v1::WatchRequest w;
    w.set_run_id("r1");
    w.set_machine_rank(rank);
    w.set_attempt((*result)->attempt());
    w.set_machine_secret((*result)->machine_secret());
    secrets_[rank] = (*result)->machine_secret();
    sinks_[rank] = std::make_shared<Sink>();
    auto id = coordinator_->Watch(w, sinks_[rank]);
    EXPECT_TRUE(id.ok()) << id.status();
    watch_ids_[rank] = id.ok() ? *id : 0;
    return **result;
  }

  // Starts generation 0 with `ranks` (MAX of them, or Tick past the last call).
  void FirstGeneration(const std::vector<int>& ranks) {
    for (int rank : ranks) Join(rank, kT0);
    coordinator_->Tick(kT0 + absl::Seconds(1));
    for (int rank : ranks) Joined(rank);
  }

  // Checks generation 1 of machines 0 and 2 after machine 1 of three left (2 processes each):
  // world 4, machine 2 dense after machine 0, one restart drawn on the budget.
  static void ExpectSurvivors0And2(const v1::JoinResponse& m0, const v1::JoinResponse& m2) {
    EXPECT_EQ(m0.attempt(), 1);
    EXPECT_EQ(m0.world_size(), 4);
    EXPECT_EQ(m0.group_world_size(), 2);
    EXPECT_EQ(m2.group_rank(), 1);
    EXPECT_EQ(m2.base_rank(), 2);
    EXPECT_EQ(m0.restart_count(), 1);
  }

  // Sends machine `rank`'s report of `kind` about attempt `attempt`, its worker `worker` the
  // cause.
  absl::Status Report(int rank, v1::ReportRequest::Kind kind, int worker, std::int64_t attempt,
                      absl::Time now) {
    v1::ReportRequest r;
    r.set_run_id("r1");
    r.set_machine_rank(rank);
    r.set_attempt(attempt);
    r.set_kind(kind);
    r.mutable_cause()->set_rank(worker);
    r.mutable_cause()->set_message("local rank 1, pid 42; hang: rank " + std::to_string(worker) +
                                   " (machine " + std::to_string(rank) + ") is stopped");
    r.set_machine_secret(secrets_[rank]);
    return coordinator_->Report(r, now);
  }

  ServerOptions options_;
  std::unique_ptr<JoinCoordinator> coordinator_;
  std::map<int, absl::StatusOr<v1::JoinResponse>> last_;
  std::map<int, std::shared_ptr<Sink>> sinks_;
  std::map<int, JoinCoordinator::Id> watch_ids_;
  std::map<int, std::string> secrets_;
  int ports_ = 0;
  int joins_ = 0;
};

}  // namespace accel::rendezvous::testing_elastic
