// libFuzzer target: arbitrary bytes as a sequence of requests to the rendezvous service handlers
// (the same code the gRPC services call: rendezvous/store/handlers.h, KvTable,
// JoinCoordinator).
//
// Input format, repeated: [method byte][length byte][length bytes parsed as that method's request
// message]. A fresh table and coordinator serve each input, so every crash reproduces from its
// input alone. Invariants checked (trap on violation): every join / wait / watch completes exactly
// once by the end of the input, and every successful join's ranks are consistent.
// How to build and run: tests/fuzz/README.md.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "accel/rendezvous/v1/rendezvous.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "rendezvous/join/coordinator.h"
#include "rendezvous/store/handlers.h"
#include "rendezvous/store/kv_table.h"

namespace accel::rendezvous {
namespace {

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

class CountingSink : public JoinCoordinator::EventSink {
 public:
  explicit CountingSink(int* outstanding) : outstanding_(outstanding) { ++*outstanding_; }
  void Send(const v1::Event& event) override {
    Check(event.kind() != v1::Event::KIND_UNSPECIFIED);
    End();
  }
  void Close(const absl::Status& status) override {
    Check(!status.ok());
    End();
  }
  // The stream ends at the end of the input, if nothing ended it before.
  void EndOfInput() {
    if (!ended_) End();
  }

 private:
  void End() {
    Check(!ended_);
    ended_ = true;
    --*outstanding_;
  }
  int* outstanding_;
  bool ended_ = false;
};

template <typename Message>
bool Parse(const std::uint8_t* data, std::size_t size, Message& message) {
  return message.ParseFromArray(data, static_cast<int>(size));
}

KvLimits FuzzLimits() {
  KvLimits limits;
  limits.max_key_bytes = 64;
  limits.max_value_bytes = 256;
  limits.max_total_bytes = 4096;
  limits.max_keys_per_wait = 8;
  return limits;
}

ServerOptions FuzzServerOptions() {
  ServerOptions options;
  options.run_id = "run";
  options.num_machines = 3;
  options.num_processes = 0;
  options.rdzv_timeout = absl::Seconds(30);
  return options;
}

// Checks a completed join's answer: the rank range, and base ranks that follow the machines.
void CheckJoinResult(const absl::StatusOr<v1::JoinResponse>& result) {
  if (!result.ok()) return;
  Check(result->base_rank() >= 0 && result->base_rank() < result->world_size());
  int base = 0;
  for (const v1::Machine& m : result->machines()) {
    Check(m.base_rank() == base);
    base += m.local_processes();
  }
  Check(result->machines_size() == 0 || base == result->world_size());
}

// One input's world: a fresh table and coordinator, a simulated clock, and every join, wait and
// watch started so far, each of which must complete exactly once.
class Session {
 public:
  Session() : table_(FuzzLimits()), coordinator_(FuzzServerOptions(), Hooks()) {}

  // Applies one request; `method` % 14 picks it (the file comment lists them).
  void Apply(std::uint8_t method, const std::uint8_t* body, std::size_t length) {
    switch (method % 14) {
      case 0:
        StoreRequest<v1::SetRequest>(body, length, HandleSet);
        break;
      case 1:
        StoreRequest<v1::GetRequest>(body, length, HandleGetNow);
        break;
      case 2:
        StoreRequest<v1::AddRequest>(body, length, HandleAdd);
        break;
      case 3:
        StoreRequest<v1::DeleteRequest>(body, length, HandleDelete);
        break;
      case 4:
        StoreRequest<v1::CompareSetRequest>(body, length, HandleCompareSet);
        break;
      case 5:
        Wait(body, length);
        break;
      case 6:
        Join(body, length);
        break;
      case 7:
        Watch(body, length);
        break;
      case 8:
        CoordinatorRequest<v1::HeartbeatRequest>(body, length, &JoinCoordinator::Heartbeat);
        break;
      case 9:
        CoordinatorRequest<v1::ReportRequest>(body, length, &JoinCoordinator::Report);
        break;
      case 10:
        PassTime(length == 0 ? 1 : body[0]);
        break;
      case 11:
      case 12:
      case 13:
        if (length > 0) Cancel(method % 14, body[0]);
        break;
    }
  }

  // Shuts down, which must complete everything still pending, exactly once.
  void Finish() {
    coordinator_.Shutdown();
    table_.FailAll(absl::UnavailableError("shutdown"));
    for (auto& sink : sinks_) sink->EndOfInput();
    Check(outstanding_ == 0);
  }

 private:
  JoinCoordinator::Hooks Hooks() {
    JoinCoordinator::Hooks hooks;
    hooks.store_port = [] { return 1234; };
    hooks.pick_master_port = [] { return absl::StatusOr<int>(29500); };
    hooks.attempt_over = [this](const std::string& ns) { table_.DropNamespace(ns); };
    return hooks;
  }

  // Set, Get, Add, Delete, CompareSet: answered at once.
  template <typename Request, typename Handler>
  void StoreRequest(const std::uint8_t* body, std::size_t length, Handler handle) {
    Request r;
    if (Parse(body, length, r)) (void)handle(table_, r);
  }

  // Heartbeat, Report: answered at once.
  template <typename Request, typename Method>
  void CoordinatorRequest(const std::uint8_t* body, std::size_t length, Method method) {
    Request r;
    if (Parse(body, length, r)) (void)(coordinator_.*method)(FillSecret(r), now_);
  }

  // Gives a request without a machine secret the one its machine was last given, so that the
  // fuzzer reaches past the secret check (a request with one keeps it: the refusal is fuzzed).
  template <typename Request>
  Request& FillSecret(Request& r) {
    auto it = secrets_.find(r.machine_rank());
    if (r.machine_secret().empty() && it != secrets_.end()) r.set_machine_secret(it->second);
    return r;
  }

  // Wait (and Get with a timeout): a KvTable waiter.
  void Wait(const std::uint8_t* body, std::size_t length) {
    v1::WaitRequest r;
    if (!Parse(body, length, r) || !CheckNamespace(r.ns()).ok()) return;
    absl::StatusOr<absl::Time> deadline = WaitDeadline(r.timeout_ms(), now_, now_ + absl::Hours(1));
    if (!deadline.ok()) return;
    ++outstanding_;
    auto done = std::make_shared<bool>(false);
    waiters_.push_back(table_.AddWaiter(r.ns(), {r.keys().begin(), r.keys().end()}, *deadline,
                                        [this, done](absl::Status) {
                                          Check(!*done);
                                          *done = true;
                                          --outstanding_;
                                        }));
  }

  void Join(const std::uint8_t* body, std::size_t length) {
    v1::JoinRequest r;
    if (!Parse(body, length, r)) return;
    ++outstanding_;
    auto done = std::make_shared<bool>(false);
    joins_.push_back(coordinator_.Join(
        r, "ipv4:10.0.0.9:5555", now_, [this, done](absl::StatusOr<v1::JoinResponse> result) {
          Check(!*done);
          *done = true;
          --outstanding_;
          CheckJoinResult(result);
          if (result.ok()) {
            secrets_[result->self().machine_rank()] = result->machine_secret();
          }
        }));
  }

  void Watch(const std::uint8_t* body, std::size_t length) {
    v1::WatchRequest r;
    if (!Parse(body, length, r)) return;
    auto sink = std::make_shared<CountingSink>(&outstanding_);
    sinks_.push_back(sink);
    absl::StatusOr<JoinCoordinator::Id> id = coordinator_.Watch(FillSecret(r), sink);
    if (!id.ok()) {
      sink->Close(id.status());  // what the service does with a refused watch
    } else {
      watches_.push_back(*id);
    }
  }

  // Advances the clock by tenths of a second and lets deadlines fire.
  void PassTime(int tenths) {
    now_ += absl::Milliseconds(tenths) * 100;
    coordinator_.Tick(now_);
    table_.ExpireWaiters(now_);
  }

  // A client goes away: 11 cancels a join, 12 a wait, 13 breaks a watch; `pick` chooses which.
  void Cancel(int method, std::uint8_t pick) {
    if (method == 11 && !joins_.empty()) {
      coordinator_.CancelJoin(joins_[pick % joins_.size()]);
    } else if (method == 12 && !waiters_.empty()) {
      table_.CancelWaiter(waiters_[pick % waiters_.size()], absl::CancelledError("gone"));
    } else if (method == 13 && !watches_.empty()) {
      coordinator_.WatchBroken(watches_[pick % watches_.size()], now_);
    }
  }

  KvTable table_;
  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
  int outstanding_ = 0;                 // joins, waits and watches not yet completed
  std::map<int, std::string> secrets_;  // machine rank → its last machine secret
  JoinCoordinator coordinator_;         // after table_ (its hooks use it)
  std::vector<JoinCoordinator::Id> joins_;
  std::vector<KvTable::WaiterId> waiters_;
  std::vector<JoinCoordinator::Id> watches_;
  std::vector<std::shared_ptr<CountingSink>> sinks_;
};

void RunOne(const std::uint8_t* data, std::size_t size) {
  Session session;
  std::size_t pos = 0;
  while (pos + 2 <= size) {
    const std::uint8_t method = data[pos];
    const std::size_t length = std::min<std::size_t>(data[pos + 1], size - pos - 2);
    session.Apply(method, data + pos + 2, length);
    pos += 2 + length;
  }
  session.Finish();
}

}  // namespace
}  // namespace accel::rendezvous

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 in a string field logs per parse
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  accel::rendezvous::RunOne(data, size);
  return 0;
}
