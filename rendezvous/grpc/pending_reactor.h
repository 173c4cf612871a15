// PendingReactor: a unary gRPC reactor whose answer comes later, from another component.
//
// The handler creates it, registers the call elsewhere (a join, a KV wait) and reports the
// registration id with Registered(). Whoever completes the registration calls Finish exactly
// once. When the client goes away, `on_cancel(id)` withdraws the registration (completing it with
// CANCELLED) — also when the cancel races with Registered(): whichever of the two comes second
// calls it, and a second withdrawal finds nothing. The reactor deletes itself in OnDone.
#ifndef ACCEL_RENDEZVOUS_GRPC_PENDING_REACTOR_H_
#define ACCEL_RENDEZVOUS_GRPC_PENDING_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

namespace accel::rendezvous {

class PendingReactor : public grpc::ServerUnaryReactor {
 public:
  // Shared with the handler, which may still use it after the reactor is gone.
  class Registration {
   public:
    explicit Registration(std::function<void(std::uint64_t)> on_cancel)
        : on_cancel_(std::move(on_cancel)) {}
    // Records the id (0 = already completed, nothing to withdraw).
    void Registered(std::uint64_t id) {
      id_.store(id);
      if (id != 0 && cancelled_.load()) on_cancel_(id);
    }
    void Cancelled() {
      cancelled_.store(true);
      const std::uint64_t id = id_.load();
      if (id != 0) on_cancel_(id);
    }

   private:
    const std::function<void(std::uint64_t)> on_cancel_;
    std::atomic<std::uint64_t> id_{0};
    std::atomic<bool> cancelled_{false};
  };

  explicit PendingReactor(std::function<void(std::uint64_t)> on_cancel)
      : registration_(std::make_shared<Registration>(std::move(on_cancel))) {}

  const std::shared_ptr<Registration>& registration() const { return registration_; }

  void OnCancel() override { registration_->Cancelled(); }
  void OnDone() override { delete this; }

 private:
  std::shared_ptr<Registration> registration_;
};

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_GRPC_PENDING_REACTOR_H_
