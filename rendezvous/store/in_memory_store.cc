#include "rendezvous/store/in_memory_store.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/absl_view.h"

namespace accel::rendezvous {
namespace {

// Blocks the caller until a KvTable waiter completes; the caller's own clock ends the wait, so
// a timeout is exact (no server tick involved).
absl::Status BlockingWait(KvTable& table, std::vector<std::string> keys, absl::Duration timeout) {
  struct Shared {
    absl::Notification done;
    absl::Status status;
  };
  auto shared = std::make_shared<Shared>();
  const absl::Time deadline = absl::Now() + timeout;
  const KvTable::WaiterId id =
      table.AddWaiter("", std::move(keys), deadline, [shared](absl::Status status) {
        shared->status = std::move(status);
        shared->done.Notify();
      });
  if (id != 0 && !shared->done.WaitForNotificationWithDeadline(deadline)) {
    // Expires overdue waiters (ours included) so the message names the missing keys.
    table.ExpireWaiters(absl::Now());
  }
  shared->done.WaitForNotification();
  return shared->status;
}

}  // namespace

InMemoryStore::InMemoryStore(const KvLimits& limits) : table_(limits) {}

absl::Status InMemoryStore::Set(std::string_view key, std::string_view value) {
  return table_.Set("", key, value);
}

absl::StatusOr<std::string> InMemoryStore::Get(std::string_view key, absl::Duration timeout) {
  if (timeout > absl::ZeroDuration()) {
    absl::Status status = BlockingWait(table_, {std::string(key)}, timeout);
    if (!status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat("get store key \"", Av(key), "\": ", status.message()));
    }
  }
  return table_.Get("", key);
}

absl::StatusOr<std::int64_t> InMemoryStore::Add(std::string_view key, std::int64_t delta) {
  return table_.Add("", key, delta);
}

absl::Status InMemoryStore::Wait(const std::vector<std::string>& keys, absl::Duration timeout) {
  return BlockingWait(table_, keys, timeout);
}

absl::StatusOr<bool> InMemoryStore::Delete(std::string_view key) { return table_.Delete("", key); }

absl::StatusOr<std::string> InMemoryStore::CompareSet(std::string_view key,
                                                      std::string_view expected,
                                                      std::string_view desired) {
  return table_.CompareSet("", key, expected, desired);
}

}  // namespace accel::rendezvous
