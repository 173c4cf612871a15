// FakeRendezvousClient: an in-process RendezvousClient for unit tests of the agent.
//
// Join returns the result (or error) set with SetJoinResult; Watch stores the callback, and
// Deliver() hands it an event as the server would. Reports are recorded for assertions.
// Thread-safe; Deliver calls the callback on the caller's thread.
#ifndef ACCEL_TESTS_TESTING_FAKE_RENDEZVOUS_CLIENT_H_
#define ACCEL_TESTS_TESTING_FAKE_RENDEZVOUS_CLIENT_H_

#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "rendezvous/grpc/rendezvous_client.h"

namespace accel::rendezvous {

class FakeRendezvousClient : public RendezvousClient {
 public:
  struct Report {
    enum class Kind { kFailure, kDone, kRestart, kHang };
    Kind kind;
    std::int64_t attempt;
    RootCause cause;
  };

  // Sets what the next Join calls return.
  void SetJoinResult(absl::StatusOr<JoinResult> result) {
    absl::MutexLock lock(&mu_);
    join_result_ = std::move(result);
  }
  // Delivers `event` to the current watcher; returns false when nobody is watching.
  bool Deliver(const Event& event) {
    EventCallback callback;
    {
      absl::MutexLock lock(&mu_);
      if (!on_event_) return false;
      callback = std::exchange(on_event_, nullptr);
    }
    callback(event);
    return true;
  }
  std::vector<JoinRequest> joins() const {
    absl::MutexLock lock(&mu_);
    return joins_;
  }
  std::vector<Report> reports() const {
    absl::MutexLock lock(&mu_);
    return reports_;
  }
  bool watching() const {
    absl::MutexLock lock(&mu_);
    return on_event_ != nullptr;
  }

  absl::StatusOr<JoinResult> Join(const JoinRequest& request, absl::Time /*deadline*/) override {
    absl::MutexLock lock(&mu_);
    joins_.push_back(request);
    return join_result_;
  }
  absl::Status Watch(std::int64_t /*attempt*/, EventCallback on_event) override {
    absl::MutexLock lock(&mu_);
    if (on_event_) return absl::FailedPreconditionError("watch rendezvous: already watching");
    on_event_ = std::move(on_event);
    return absl::OkStatus();
  }
  void StopWatch() override {
    absl::MutexLock lock(&mu_);
    on_event_ = nullptr;
  }
  absl::Status ReportFailure(std::int64_t attempt, const RootCause& cause) override {
    return Record(Report::Kind::kFailure, attempt, cause);
  }
  absl::Status ReportStopping(std::int64_t attempt, const RootCause& cause) override {
    return Record(Report::Kind::kFailure, attempt, cause);
  }
  absl::Status ReportDone(std::int64_t attempt) override {
    return Record(Report::Kind::kDone, attempt, RootCause{});
  }
  absl::Status RequestRestart(std::int64_t attempt, const RootCause& cause) override {
    return Record(Report::Kind::kRestart, attempt, cause);
  }
  absl::Status ReportHang(std::int64_t attempt, const RootCause& cause) override {
    return Record(Report::Kind::kHang, attempt, cause);
  }

 private:
  absl::Status Record(Report::Kind kind, std::int64_t attempt, const RootCause& cause) {
    absl::MutexLock lock(&mu_);
    reports_.push_back(Report{kind, attempt, cause});
    return absl::OkStatus();
  }

  mutable absl::Mutex mu_;
  absl::StatusOr<JoinResult> join_result_ ABSL_GUARDED_BY(mu_) =
      absl::FailedPreconditionError("join rendezvous: FakeRendezvousClient has no result set");
  EventCallback on_event_ ABSL_GUARDED_BY(mu_);
  std::vector<JoinRequest> joins_ ABSL_GUARDED_BY(mu_);
  std::vector<Report> reports_ ABSL_GUARDED_BY(mu_);
};

}  // namespace accel::rendezvous

#endif  // ACCEL_TESTS_TESTING_FAKE_RENDEZVOUS_CLIENT_H_
