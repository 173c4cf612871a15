// libFuzzer target: arbitrary bytes as a sequence of requests to the rendezvous service handlers
// (the same code the gRPC services call: store_handlers.h, KvTable, JoinCoordinator).
//
// Input format, repeated: [method byte][length byte][length bytes parsed as that method's request
// message]. A fresh table and coordinator serve each input, so every crash reproduces from its
// input alone. Invariants checked (trap on violation): every join / wait / watch completes exactly
// once by the end of the input, and every successful join's ranks are consistent.
// How to build and run: tests/fuzz/README.md.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

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

void RunOne(const std::uint8_t* data, std::size_t size) {
  KvLimits limits;
  limits.max_key_bytes = 64;
  limits.max_value_bytes = 256;
  limits.max_total_bytes = 4096;
  limits.max_keys_per_wait = 8;
  KvTable table(limits);
  ServerOptions options;
  options.run_id = "run";
  options.num_machines = 3;
  options.num_processes = 0;
  options.rdzv_timeout = absl::Seconds(30);
  JoinCoordinator::Hooks hooks;
  hooks.store_port = [] { return 1234; };
  hooks.pick_master_port = [] { return absl::StatusOr<int>(29500); };
  hooks.attempt_over = [&table](const std::string& ns) { table.DropNamespace(ns); };
  JoinCoordinator coordinator(options, hooks);

  absl::Time now = absl::FromUnixSeconds(1'700'000'000);
  int outstanding = 0;  // joins, waits and watches not yet completed
  std::vector<JoinCoordinator::Id> joins;
  std::vector<KvTable::WaiterId> waiters;
  std::vector<JoinCoordinator::Id> watches;
  std::vector<std::shared_ptr<CountingSink>> sinks;

  std::size_t pos = 0;
  while (pos + 2 <= size) {
    const std::uint8_t method = data[pos];
    const std::size_t length = std::min<std::size_t>(data[pos + 1], size - pos - 2);
    const std::uint8_t* body = data + pos + 2;
    pos += 2 + length;
    switch (method % 14) {
      case 0: {
        v1::SetRequest r;
        if (Parse(body, length, r)) (void)HandleSet(table, r);
        break;
      }
      case 1: {
        v1::GetRequest r;
        if (Parse(body, length, r)) (void)HandleGetNow(table, r);
        break;
      }
      case 2: {
        v1::AddRequest r;
        if (Parse(body, length, r)) (void)HandleAdd(table, r);
        break;
      }
      case 3: {
        v1::DeleteRequest r;
        if (Parse(body, length, r)) (void)HandleDelete(table, r);
        break;
      }
      case 4: {
        v1::CompareSetRequest r;
        if (Parse(body, length, r)) (void)HandleCompareSet(table, r);
        break;
      }
      case 5: {  // Wait (and Get with a timeout): a KvTable waiter
        v1::WaitRequest r;
        if (!Parse(body, length, r) || !CheckNamespace(r.ns()).ok()) break;
        absl::StatusOr<absl::Time> deadline =
            WaitDeadline(r.timeout_ms(), now, now + absl::Hours(1));
        if (!deadline.ok()) break;
        ++outstanding;
        auto done = std::make_shared<bool>(false);
        waiters.push_back(table.AddWaiter(r.ns(), {r.keys().begin(), r.keys().end()}, *deadline,
                                          [&outstanding, done](absl::Status) {
                                            Check(!*done);
                                            *done = true;
                                            --outstanding;
                                          }));
        break;
      }
      case 6: {
        v1::JoinRequest r;
        if (!Parse(body, length, r)) break;
        ++outstanding;
        auto done = std::make_shared<bool>(false);
        joins.push_back(coordinator.Join(
            r, "ipv4:10.0.0.9:5555", now,
            [&outstanding, done](absl::StatusOr<v1::JoinResponse> result) {
              Check(!*done);
              *done = true;
              --outstanding;
              if (!result.ok()) return;
              Check(result->base_rank() >= 0 && result->base_rank() < result->world_size());
              int base = 0;
              for (const v1::Machine& m : result->machines()) {
                Check(m.base_rank() == base);
                base += m.local_processes();
              }
              Check(result->machines_size() == 0 || base == result->world_size());
            }));
        break;
      }
      case 7: {
        v1::WatchRequest r;
        if (!Parse(body, length, r)) break;
        auto sink = std::make_shared<CountingSink>(&outstanding);
        sinks.push_back(sink);
        absl::StatusOr<JoinCoordinator::Id> id = coordinator.Watch(r, sink);
        if (!id.ok()) {
          sink->Close(id.status());  // what the service does with a refused watch
        } else {
          watches.push_back(*id);
        }
        break;
      }
      case 8: {
        v1::HeartbeatRequest r;
        if (Parse(body, length, r)) (void)coordinator.Heartbeat(r, now);
        break;
      }
      case 9: {
        v1::ReportRequest r;
        if (Parse(body, length, r)) (void)coordinator.Report(r, now);
        break;
      }
      case 10:  // time passes
        now += absl::Milliseconds(length == 0 ? 1 : body[0]) * 100;
        coordinator.Tick(now);
        table.ExpireWaiters(now);
        break;
      case 11:  // a client goes away
        if (!joins.empty() && length > 0) coordinator.CancelJoin(joins[body[0] % joins.size()]);
        break;
      case 12:
        if (!waiters.empty() && length > 0) {
          table.CancelWaiter(waiters[body[0] % waiters.size()], absl::CancelledError("gone"));
        }
        break;
      case 13:
        if (!watches.empty() && length > 0) {
          coordinator.WatchBroken(watches[body[0] % watches.size()], now);
        }
        break;
    }
  }
  // Shutdown must complete everything still pending, exactly once.
  coordinator.Shutdown();
  table.FailAll(absl::UnavailableError("shutdown"));
  for (auto& sink : sinks) sink->EndOfInput();
  Check(outstanding == 0);
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
