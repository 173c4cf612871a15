// KvTable: the key-value data behind InMemoryStore and the server's Store service.
//
// Keys live in namespaces (the server uses one per run and attempt; InMemoryStore uses ""). Waits
// are asynchronous: AddWaiter registers a callback that runs once every key is set, or with
// DEADLINE_EXCEEDED when ExpireWaiters passes its deadline, or with the status given to
// CancelWaiter / FailAll. No thread is held per waiter, so the server can hold thousands.
//
// Limits: an empty key, a key or namespace over max_key_bytes or a value over max_value_bytes is
// INVALID_ARGUMENT. max_total_bytes caps everything the table keeps: each entry counts its
// namespace, key and value plus defaults::kStoreEntryOverheadBytes (so a million tiny entries
// cost what they really cost), and each pending waiter counts its keys the same way. A Set or
// a wait that would go over it is RESOURCE_EXHAUSTED.
//
// Thread-safety: all methods are thread-safe. Callbacks run on the calling thread after the
// table's lock is released, exactly once each; they must not block.
#ifndef ACCEL_RENDEZVOUS_STORE_KV_TABLE_H_
#define ACCEL_RENDEZVOUS_STORE_KV_TABLE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "rendezvous/grpc/server.h"

namespace accel::rendezvous {

class KvTable {
 public:
  using WaitCallback = std::function<void(absl::Status)>;
  using WaiterId = std::uint64_t;

  explicit KvTable(const KvLimits& limits);

  absl::Status Set(std::string_view ns, std::string_view key, std::string_view value);
  // NOT_FOUND when absent.
  absl::StatusOr<std::string> Get(std::string_view ns, std::string_view key);
  // INVALID_ARGUMENT when the stored value is not a decimal integer; OUT_OF_RANGE on overflow.
  absl::StatusOr<std::int64_t> Add(std::string_view ns, std::string_view key, std::int64_t delta);
  absl::StatusOr<bool> Delete(std::string_view ns, std::string_view key);
  // Empty `expected` means "must be absent". Returns the value stored afterwards.
  absl::StatusOr<std::string> CompareSet(std::string_view ns, std::string_view key,
                                         std::string_view expected, std::string_view desired);

  // Registers a wait for all `keys` of `ns` until `deadline`. When they are all set already,
  // runs `done(OK)` before returning and returns 0. Invalid keys or too many keys: runs
  // `done(INVALID_ARGUMENT)` and returns 0; a waiter the byte cap has no room for: runs
  // `done(RESOURCE_EXHAUSTED)` and returns 0. Otherwise returns the waiter's id (never 0).
  WaiterId AddWaiter(std::string_view ns, std::vector<std::string> keys, absl::Time deadline,
                     WaitCallback done);
  // Runs the waiter's callback with `status` if it is still pending; returns whether it was.
  bool CancelWaiter(WaiterId id, const absl::Status& status);
  // Fails every waiter whose deadline is <= now with DEADLINE_EXCEEDED (naming its missing keys).
  // Returns the earliest deadline still pending (InfiniteFuture when none).
  absl::Time ExpireWaiters(absl::Time now);
  // Fails every pending waiter with `status` (server shutdown).
  void FailAll(const absl::Status& status);
  // Deletes every key of `ns` (an attempt that is over).
  void DropNamespace(std::string_view ns);

  // Returns the bytes counted against max_total_bytes (entries and pending waiters).
  std::int64_t total_bytes() const;
  std::size_t pending_waiters() const;

 private:
  struct FullKey {
    std::string ns, key;
    template <typename H>
    friend H AbslHashValue(H h, const FullKey& k) {
      return H::combine(std::move(h), k.ns, k.key);
    }
    friend bool operator==(const FullKey& a, const FullKey& b) {
      return a.ns == b.ns && a.key == b.key;
    }
  };
  struct Waiter {
    std::string ns;
    std::vector<std::string> keys;
    int missing = 0;
    absl::Time deadline;
    WaitCallback done;
  };
  using Ready = std::vector<std::pair<WaitCallback, absl::Status>>;

  absl::Status CheckKey(std::string_view ns, std::string_view key) const;
  absl::Status SetLocked(std::string_view ns, std::string_view key, std::string_view value,
                         Ready& ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EraseLocked(const FullKey& key, Ready& ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemoveWaiterLocked(WaiterId id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string MissingMessageLocked(const Waiter& waiter) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Run(Ready& ready);

  const KvLimits limits_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<FullKey, std::string> data_ ABSL_GUARDED_BY(mu_);
  std::int64_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  WaiterId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<WaiterId, Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<FullKey, std::vector<WaiterId>> by_key_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<absl::Time, WaiterId>> by_deadline_ ABSL_GUARDED_BY(mu_);
};

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_STORE_KV_TABLE_H_
