// accel::Error: the one exception type thrown by libaccel's public API.
//
// LibTorch users expect exceptions, so every public call that fails throws accel::Error whose
// what() reads "<operation> <subject>: <cause>", e.g.
// "all-reduce bucket 3 (rank 1 of 4): deadline of 300000 ms exceeded".
#ifndef ACCEL_ERROR_H_
#define ACCEL_ERROR_H_

#include <stdexcept>
#include <string>

namespace accel {

class Error : public std::runtime_error {
 public:
  // Builds "<operation> <subject>: <cause>"; an empty subject is left out.
  Error(const std::string& operation, const std::string& subject, const std::string& cause);
  // Takes an already formatted message.
  explicit Error(const std::string& message);
};

}  // namespace accel

#endif  // ACCEL_ERROR_H_
