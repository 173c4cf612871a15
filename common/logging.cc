#include "common/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace accel {

void InitLogging(bool verbose) {
  auto logger = spdlog::stderr_color_mt("accel-launch");
  logger->set_pattern("[accel-launch] %^%l%$: %v");
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace accel
