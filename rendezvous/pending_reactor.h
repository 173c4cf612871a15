// PendingReactor: a unary gRPC reactor whose answer comes later, from another component.
//
// The handler creates it, registers the call elsewhere (a join, a KV wait) and stores the
// registration id in id(). Whoever completes the registration calls Finish exactly once. When the
// client goes away first, OnCancel hands the id to `on_cancel`, which withdraws the registration
// (completing it with CANCELLED). The reactor deletes itself in OnDone.
#ifndef ACCEL_RENDEZVOUS_PENDING_REACTOR_H_
#define ACCEL_RENDEZVOUS_PENDING_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

namespace accel::rendezvous {

class PendingReactor : public grpc::ServerUnaryReactor {
 public:
  explicit PendingReactor(std::function<void(std::uint64_t)> on_cancel)
      : on_cancel_(std::move(on_cancel)), id_(std::make_shared<std::atomic<std::uint64_t>>(0)) {}

  // The registration id; shared so it can be stored after the reactor may already be gone.
  const std::shared_ptr<std::atomic<std::uint64_t>>& id() const { return id_; }

  void OnCancel() override {
    const std::uint64_t id = id_->load();
    if (id != 0) on_cancel_(id);
  }
  void OnDone() override { delete this; }

 private:
  std::function<void(std::uint64_t)> on_cancel_;
  std::shared_ptr<std::atomic<std::uint64_t>> id_;
};

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_PENDING_REACTOR_H_
