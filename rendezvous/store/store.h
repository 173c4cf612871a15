// Store: the key-value store that workers use to find each other (Gloo-style).
//
// Implementations: InMemoryStore (tests, and the server's backing store), PrefixStore (namespaces
// another store), and the gRPC client that workers use (ConnectStore in store_client.h).
// All methods are thread-safe. Every wait has a deadline; a wait that runs out returns
// DEADLINE_EXCEEDED naming the keys still missing.
#ifndef ACCEL_RENDEZVOUS_STORE_STORE_H_
#define ACCEL_RENDEZVOUS_STORE_STORE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace accel::rendezvous {

class Store {
 public:
  virtual ~Store() = default;

  // Sets `key` to `value`, replacing any previous value; wakes waiters on `key`.
  virtual absl::Status Set(std::string_view key, std::string_view value) = 0;

  // Returns the value of `key`, waiting up to `timeout` for it to be set. A zero timeout does not
  // wait: NOT_FOUND when absent. DEADLINE_EXCEEDED when the wait runs out.
  virtual absl::StatusOr<std::string> Get(std::string_view key, absl::Duration timeout) = 0;

  // Atomically adds `delta` to the integer stored at `key` (absent = 0) and returns the result.
  virtual absl::StatusOr<std::int64_t> Add(std::string_view key, std::int64_t delta) = 0;

  // Waits until every key in `keys` is set, or DEADLINE_EXCEEDED after `timeout`.
  virtual absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) = 0;

  // Deletes `key`; returns whether it existed.
  virtual absl::StatusOr<bool> Delete(std::string_view key) = 0;

  // Sets `key` to `desired` if its current value is `expected` (empty `expected` = must be absent).
  // Returns the value now stored.
  virtual absl::StatusOr<std::string> CompareSet(std::string_view key, std::string_view expected,
                                                 std::string_view desired) = 0;
};

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_STORE_STORE_H_
