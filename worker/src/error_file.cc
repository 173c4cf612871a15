#include "accel/error_file.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <string>

#include "common/env_contract.h"
#include "common/env_reader.h"
#include "common/exit_codes.h"
#include "common/json.h"
#include "common/safe_open.h"

namespace accel {
namespace {

// This worker's RANK, 0 when it is unset or not an integer.
int Rank() { return env::GetInt(env::kRank, 0).value_or(0); }

std::terminate_handler g_previous = nullptr;

[[noreturn]] void OnTerminate() {
  if (std::exception_ptr current = std::current_exception()) {
    try {
      std::rethrow_exception(current);
    } catch (const std::exception& e) {
      RecordError(e.what());
    } catch (...) {
      RecordError("unknown exception");
    }
  }
  if (g_previous != nullptr) g_previous();
  std::abort();
}

}  // namespace

bool RecordError(const std::string& message) noexcept {
  try {
    const char* path = env::Get(env::kErrorFile);
    if (path == nullptr) return false;
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    char time[32];
    std::snprintf(time, sizeof(time), "%.3f", now);
    const std::string text = "{\"message\": " + JsonQuote(message) + ", \"time\": " + time +
                             ", \"rank\": " + std::to_string(Rank()) + "}\n";
    // A fresh temporary file (O_EXCL | O_NOFOLLOW) renamed into place: common/safe_open.h.
    return safe_open::ReplaceFile(path, text, 0600) == 0;
  } catch (...) {
    return false;
  }
}

int RunWorker(const std::function<int()>& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    RecordError(e.what());
    std::fprintf(stderr, "[accel] rank %d: %s\n", Rank(), e.what());
    return kExitWorkerFailed;
  }
}

void InstallTerminateHandler() {
  static std::once_flag once;
  std::call_once(once, [] { g_previous = std::set_terminate(OnTerminate); });
}

}  // namespace accel
