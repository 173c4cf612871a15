#include "accel/error.h"

#include <string>

namespace accel {
namespace {
std::string Format(const std::string& operation, const std::string& subject,
                   const std::string& cause) {
  std::string out = operation;
  if (!subject.empty()) out += " " + subject;
  return out + ": " + cause;
}
}  // namespace

Error::Error(const std::string& operation, const std::string& subject, const std::string& cause)
    : std::runtime_error(Format(operation, subject, cause)) {}

Error::Error(const std::string& message) : std::runtime_error(message) {}

}  // namespace accel
