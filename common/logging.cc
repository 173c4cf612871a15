#include "common/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "common/live_line.h"
#include "common/printable.h"

namespace accel {
namespace {

// The notice writer: stderr, the bytes as given (no pattern, no added newline). Its sink takes
// the same console lock as the default logger's. Never destroyed (no exit-time teardown).
spdlog::logger& NoticeLogger() {
  static spdlog::logger* const logger = [] {
    auto* created = new spdlog::logger("accel-launch-notice",
                                       std::make_shared<spdlog::sinks::stderr_sink_mt>());
    created->set_formatter(std::make_unique<spdlog::pattern_formatter>(
        "%v", spdlog::pattern_time_type::local, /*eol=*/""));
    created->set_level(spdlog::level::trace);
    return created;
  }();
  return *logger;
}

}  // namespace

void InitLogging(bool verbose) {
  auto logger = spdlog::stderr_color_mt("accel-launch");
  logger->set_pattern(absl::StrCat(kLogPrefix, "%^%l%$: %v"));
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  spdlog::set_default_logger(logger);
}

void Notice(absl::string_view message) {
  // One line, whatever the message carries (a peer's host name, a file's bytes).
  NoticeBlock(
      absl::StrCat(kLogPrefix, Printable(std::string_view(message.data(), message.size())), "\n"));
}

void NoticeBlock(absl::string_view text) {
  WriteAboveLiveLine([text] {
    NoticeLogger().log(spdlog::level::info, spdlog::string_view_t(text.data(), text.size()));
  });
}

}  // namespace accel
