#include "rendezvous/grpc/grpc_log.h"

#include <grpc/support/log.h>

#include <atomic>
#include <mutex>
#include <string_view>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/defaults.h"
#include "common/logging.h"

namespace accel::rendezvous {
namespace {

std::atomic<std::int64_t> failed_handshakes{0};
std::atomic<bool> serving_rendezvous{false};

// gRPC says a handshake failed in several places (the TLS layer, the security connector, the
// transport), once or more per connection; each of its lines is counted as one sighting.
bool IsHandshakeFailure(std::string_view message) {
  return message.find("andshak") != std::string_view::npos &&
         (message.find("fail") != std::string_view::npos ||
          message.find("Fail") != std::string_view::npos);
}

void LogHandshakeFailure(std::string_view message) {
  static absl::Mutex mu(absl::kConstInit);
  static absl::Time last_said = absl::InfinitePast();
  static std::int64_t said_count = 0;
  const std::int64_t count = failed_handshakes.fetch_add(1) + 1;
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu);
  if (said_count == 0) {
    spdlog::warn(
        "rendezvous: a TLS handshake failed ({}); a peer without this job's token, or with "
        "another job's, is refused before anything of the job is sent; further failures are "
        "counted, not logged one by one",
        message);
  } else if (now - last_said < absl::FromChrono(defaults::kRefusedHandshakeSummaryEvery)) {
    return;
  } else {
    spdlog::warn("rendezvous: {} more TLS handshakes failed (refused peers without the token)",
                 count - said_count);
  }
  said_count = count;
  last_said = now;
}

void Route(gpr_log_func_args* args) {
  const std::string_view message = args->message == nullptr ? "" : args->message;
  if (IsHandshakeFailure(message)) {
    if (serving_rendezvous.load()) {
      LogHandshakeFailure(message);
    } else {
      failed_handshakes.fetch_add(1);
      spdlog::debug("gRPC: {} ({}:{})", message, args->file, args->line);
    }
    return;
  }
  // The TLS connector logs, as an error, every handshake cancelled while its peer check was
  // pending (a stranger that hung up, a connection cut at shutdown): routine, said as debug.
  if (args->severity == GPR_LOG_SEVERITY_ERROR &&
      message.find("cancel_check_peer") == std::string_view::npos) {
    spdlog::warn("gRPC: {} ({}:{})", message, args->file, args->line);
  } else {
    spdlog::debug("gRPC: {} ({}:{})", message, args->file, args->line);
  }
}

}  // namespace

void RouteGrpcLogs(bool serving) {
  if (serving) serving_rendezvous.store(true);
  static std::once_flag once;
  std::call_once(once, [] { gpr_set_log_function(&Route); });
}

std::int64_t FailedHandshakes() { return failed_handshakes.load(); }

void NoteRefusedHandshake(std::string_view why) {
  if (serving_rendezvous.load()) {
    LogHandshakeFailure(why);
  } else {
    failed_handshakes.fetch_add(1);
  }
}

}  // namespace accel::rendezvous
