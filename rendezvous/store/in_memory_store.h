// InMemoryStore: a Store held in this process (unit tests, and single-process use).
//
// Thread-safe. Get/Wait block the calling thread up to their timeout and return
// DEADLINE_EXCEEDED naming the missing keys when it runs out. Limits as in KvLimits: an empty or
// oversize key or an oversize value is INVALID_ARGUMENT, exceeding the total is RESOURCE_EXHAUSTED.
#ifndef ACCEL_RENDEZVOUS_STORE_IN_MEMORY_STORE_H_
#define ACCEL_RENDEZVOUS_STORE_IN_MEMORY_STORE_H_

#include <memory>

#include "rendezvous/grpc/server.h"
#include "rendezvous/store/kv_table.h"
#include "rendezvous/store/store.h"

namespace accel::rendezvous {

class InMemoryStore : public Store {
 public:
  explicit InMemoryStore(const KvLimits& limits = {});

  absl::Status Set(std::string_view key, std::string_view value) override;
  absl::StatusOr<std::string> Get(std::string_view key, absl::Duration timeout) override;
  absl::StatusOr<std::int64_t> Add(std::string_view key, std::int64_t delta) override;
  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) override;
  absl::StatusOr<bool> Delete(std::string_view key) override;
  absl::StatusOr<std::string> CompareSet(std::string_view key, std::string_view expected,
                                         std::string_view desired) override;

 private:
  KvTable table_;
};

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_STORE_IN_MEMORY_STORE_H_
