#include "rendezvous/grpc/heartbeats.h"

#include <grpcpp/grpcpp.h>

#include <utility>
#include <vector>

#include "common/logging.h"
#include "rendezvous/grpc/channel.h"

namespace accel::rendezvous {
namespace {

// Heartbeats in flight at once; a server that answers none of them gets no more until one ends.
constexpr std::size_t kMaxInFlight = 16;
constexpr int kControl = -1;  // the prober's key for the control target

// Returns `options` with the control off when there is no listener to be the control.
LivenessOptions WithControl(LivenessOptions options, bool have_listener) {
  options.confirm_with_control = options.confirm_with_control && have_listener;
  return options;
}

}  // namespace

struct Heartbeats::Call {
  grpc::ClientContext context;
  v1::Ack ack;
};

Heartbeats::Heartbeats(HeartbeatOptions options, std::function<void(const std::string&)> on_lost)
    : options_(std::move(options)),
      on_lost_(std::move(on_lost)),
      server_(WithControl(options_.liveness, options_.listener != nullptr), absl::Now(),
              options_.server.has_value(), "no answer to heartbeats") {
  if (options_.server.has_value()) {
    prober_ = std::make_unique<TcpProber>(
        [this](int key, absl::Time started, bool answered, absl::Time now) {
          OnProbe(key, started, answered, now);
        });
  }
  thread_ = std::thread([this] { Run(); });
}

Heartbeats::~Heartbeats() {
  Stop();
  thread_.join();
  prober_.reset();  // no probe result arrives after this
  absl::MutexLock lock(&mu_);
  for (auto& [id, call] : in_flight_) call->context.TryCancel();
  mu_.Await(absl::Condition(
      +[](std::map<std::uint64_t, std::shared_ptr<Call>>* calls) { return calls->empty(); },
      &in_flight_));
}

void Heartbeats::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
}

void Heartbeats::OnProbe(int key, absl::Time started, bool answered, absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (key == kControl) {
    if (answered) server_.ControlAnswered(started);
  } else {
    server_.ProbeResult(started, answered, now);
  }
}

void Heartbeats::Send() {
  std::shared_ptr<Call> call;
  std::uint64_t id = 0;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ || in_flight_.size() >= kMaxInFlight) return;
    call = std::make_shared<Call>();
    // A late answer still shows the server alive when it comes (the verdict is the liveness
    // rules', not this deadline's): wait for one as long as silence is tolerated at all.
    PrepareContext(call->context, options_.token, absl::Now() + options_.liveness.silent_lost);
    call->context.set_wait_for_ready(false);
    id = next_call_++;
    in_flight_[id] = call;
  }
  // Started without the lock: the callback takes it, and may run on this thread.
  options_.stub->async()->Heartbeat(
      &call->context, &options_.request, &call->ack, [this, id](grpc::Status status) {
        absl::MutexLock lock(&mu_);
        // Any answer, even an error, shows the server is alive.
        const grpc::StatusCode code = status.error_code();
        if (code != grpc::StatusCode::UNAVAILABLE && code != grpc::StatusCode::DEADLINE_EXCEEDED &&
            code != grpc::StatusCode::CANCELLED) {
          server_.Heartbeat(absl::Now());
        } else {
          spdlog::debug("heartbeat: {}", status.error_message());
        }
        in_flight_.erase(id);  // the call (and its context) goes when this callback returns
      });
}

void Heartbeats::Run() {
  const absl::Duration interval = options_.liveness.heartbeat_interval;
  absl::Time next_send = absl::Now() + interval;
  std::vector<ProbeTarget> targets;
  while (true) {
    std::string lost;
    bool send = false;
    {
      absl::MutexLock lock(&mu_);
      const absl::Time wake = std::min(next_send, server_.Check(absl::Now()).next);
      mu_.AwaitWithDeadline(absl::Condition(&stopping_), wake);
      if (stopping_) return;
      const absl::Time now = absl::Now();
      const Liveness::Verdict verdict = server_.Check(now);
      if (verdict.lost) {
        lost = verdict.why;
        stopping_ = true;
      } else {
        targets.clear();
        if (server_.WantsProbe(now)) {
          targets.push_back(*options_.server);
          if (options_.listener != nullptr) {  // the control: this machine's own probe port
            targets.push_back(ProbeTarget{kControl, "localhost", options_.listener->port()});
          }
        }
        if (now >= next_send) {
          send = true;
          next_send = now + interval;  // after a stall, no burst
        }
      }
    }
    if (!lost.empty()) {
      on_lost_(lost);
      return;
    }
    if (send) Send();
    if (prober_ != nullptr) prober_->SetTargets(targets);
    if (options_.listener != nullptr) options_.listener->Drain();
  }
}

}  // namespace accel::rendezvous
