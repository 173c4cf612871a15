#include "rendezvous/store/kv_table.h"

#include <algorithm>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/absl_view.h"
#include "common/defaults.h"

namespace accel::rendezvous {
namespace {

// What one entry costs: its bytes plus the table's per-entry overhead (common/defaults.h).
std::int64_t EntryBytes(std::string_view ns, std::string_view key, std::string_view value) {
  return static_cast<std::int64_t>(ns.size() + key.size() + value.size()) +
         defaults::kStoreEntryOverheadBytes;
}

// What one waiter costs: its namespace and keys, each key kept twice (the waiter and the by-key
// index, each with a copy of the namespace), plus the same overhead per key and per waiter.
std::int64_t WaiterBytes(std::string_view ns, const std::vector<std::string>& keys) {
  std::int64_t bytes = static_cast<std::int64_t>(ns.size()) + defaults::kStoreEntryOverheadBytes;
  for (const std::string& key : keys) {
    bytes +=
        static_cast<std::int64_t>(2 * key.size() + ns.size()) + defaults::kStoreEntryOverheadBytes;
  }
  return bytes;
}

}  // namespace

KvTable::KvTable(const KvLimits& limits) : limits_(limits) {}

absl::Status KvTable::CheckKey(std::string_view ns, std::string_view key) const {
  if (key.empty()) return absl::InvalidArgumentError("store key: the key is empty");
  if (static_cast<std::int64_t>(key.size()) > limits_.max_key_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("store key of ", key.size(),
                                                   " bytes: longer than the limit of ",
                                                   limits_.max_key_bytes, " bytes"));
  }
  if (static_cast<std::int64_t>(ns.size()) > limits_.max_key_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("store namespace of ", ns.size(),
                                                   " bytes: longer than the limit of ",
                                                   limits_.max_key_bytes, " bytes"));
  }
  return absl::OkStatus();
}

void KvTable::Run(Ready& ready) {
  for (auto& [callback, status] : ready) callback(status);
}

absl::Status KvTable::SetLocked(std::string_view ns, std::string_view key, std::string_view value,
                                Ready& ready) {
  if (static_cast<std::int64_t>(value.size()) > limits_.max_value_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("set store key \"", Av(key), "\": value of ",
                                                   value.size(), " bytes is over the limit of ",
                                                   limits_.max_value_bytes, " bytes"));
  }
  FullKey full{std::string(ns), std::string(key)};
  auto it = data_.find(full);
  const std::int64_t old_bytes = it == data_.end() ? 0 : EntryBytes(ns, key, it->second);
  const std::int64_t new_total = total_bytes_ - old_bytes + EntryBytes(ns, key, value);
  if (new_total > limits_.max_total_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("set store key \"", Av(key), "\": the store would hold ", new_total,
                     " bytes, over its limit of ", limits_.max_total_bytes, " bytes"));
  }
  total_bytes_ = new_total;
  if (it != data_.end()) {
    it->second.assign(value.data(), value.size());
    return absl::OkStatus();
  }
  data_.emplace(full, std::string(value));
  auto waiting = by_key_.find(full);
  if (waiting == by_key_.end()) return absl::OkStatus();
  const std::vector<WaiterId> ids = waiting->second;  // RemoveWaiterLocked edits the list
  for (WaiterId id : ids) {
    auto w = waiters_.find(id);
    if (w == waiters_.end() || --w->second.missing > 0) continue;
    ready.emplace_back(std::move(w->second.done), absl::OkStatus());
    RemoveWaiterLocked(id);
  }
  return absl::OkStatus();
}

absl::Status KvTable::Set(std::string_view ns, std::string_view key, std::string_view value) {
  Ready ready;
  absl::Status status = CheckKey(ns, key);
  if (status.ok()) {
    absl::MutexLock lock(&mu_);
    status = SetLocked(ns, key, value, ready);
  }
  Run(ready);
  return status;
}

absl::StatusOr<std::string> KvTable::Get(std::string_view ns, std::string_view key) {
  if (absl::Status status = CheckKey(ns, key); !status.ok()) return status;
  absl::MutexLock lock(&mu_);
  auto it = data_.find(FullKey{std::string(ns), std::string(key)});
  if (it == data_.end()) {
    return absl::NotFoundError(absl::StrCat("get store key \"", Av(key), "\": not set"));
  }
  return it->second;
}

absl::StatusOr<std::int64_t> KvTable::Add(std::string_view ns, std::string_view key,
                                          std::int64_t delta) {
  if (absl::Status status = CheckKey(ns, key); !status.ok()) return status;
  Ready ready;
  absl::StatusOr<std::int64_t> result;
  {
    absl::MutexLock lock(&mu_);
    std::int64_t current = 0;
    auto it = data_.find(FullKey{std::string(ns), std::string(key)});
    if (it != data_.end() && !absl::SimpleAtoi(it->second, &current)) {
      return absl::InvalidArgumentError(
          absl::StrCat("add to store key \"", Av(key), "\": its value is not an integer"));
    }
    if ((delta > 0 && current > std::numeric_limits<std::int64_t>::max() - delta) ||
        (delta < 0 && current < std::numeric_limits<std::int64_t>::min() - delta)) {
      return absl::OutOfRangeError(
          absl::StrCat("add ", delta, " to store key \"", Av(key), "\": overflows ", current));
    }
    const std::int64_t sum = current + delta;
    absl::Status status = SetLocked(ns, key, absl::StrCat(sum), ready);
    if (status.ok()) {
      result = sum;
    } else {
      result = status;
    }
  }
  Run(ready);
  return result;
}

void KvTable::EraseLocked(const FullKey& key, Ready& /*ready*/) {
  auto it = data_.find(key);
  if (it == data_.end()) return;
  total_bytes_ -= EntryBytes(key.ns, key.key, it->second);
  data_.erase(it);
  auto waiting = by_key_.find(key);
  if (waiting == by_key_.end()) return;
  for (WaiterId id : waiting->second) {
    auto w = waiters_.find(id);
    if (w != waiters_.end()) ++w->second.missing;
  }
}

absl::StatusOr<bool> KvTable::Delete(std::string_view ns, std::string_view key) {
  if (absl::Status status = CheckKey(ns, key); !status.ok()) return status;
  Ready ready;
  absl::MutexLock lock(&mu_);
  FullKey full{std::string(ns), std::string(key)};
  const bool existed = data_.contains(full);
  EraseLocked(full, ready);
  return existed;
}

absl::StatusOr<std::string> KvTable::CompareSet(std::string_view ns, std::string_view key,
                                                std::string_view expected,
                                                std::string_view desired) {
  if (absl::Status status = CheckKey(ns, key); !status.ok()) return status;
  Ready ready;
  absl::StatusOr<std::string> result;
  {
    absl::MutexLock lock(&mu_);
    auto it = data_.find(FullKey{std::string(ns), std::string(key)});
    const bool matches = it == data_.end() ? expected.empty() : it->second == expected;
    if (!matches) return it == data_.end() ? std::string() : it->second;
    absl::Status status = SetLocked(ns, key, desired, ready);
    if (status.ok()) {
      result = std::string(desired);
    } else {
      result = status;
    }
  }
  Run(ready);
  return result;
}

KvTable::WaiterId KvTable::AddWaiter(std::string_view ns, std::vector<std::string> keys,
                                     absl::Time deadline, WaitCallback done) {
  absl::Status invalid;
  if (keys.empty()) invalid = absl::InvalidArgumentError("wait for store keys: no keys given");
  if (static_cast<int>(keys.size()) > limits_.max_keys_per_wait) {
    invalid = absl::InvalidArgumentError(absl::StrCat("wait for ", keys.size(),
                                                      " store keys: more than the limit of ",
                                                      limits_.max_keys_per_wait));
  }
  for (const std::string& key : keys) {
    if (!invalid.ok()) break;
    invalid = CheckKey(ns, key);
  }
  if (!invalid.ok()) {
    done(invalid);
    return 0;
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  WaiterId id = 0;
  {
    absl::MutexLock lock(&mu_);
    int missing = 0;
    for (const std::string& key : keys) {
      if (!data_.contains(FullKey{std::string(ns), key})) ++missing;
    }
    const std::int64_t bytes = WaiterBytes(ns, keys);
    if (missing > 0 && total_bytes_ + bytes > limits_.max_total_bytes) {
      invalid = absl::ResourceExhaustedError(absl::StrCat(
          "wait for ", keys.size(), " store keys: the store would hold ", total_bytes_ + bytes,
          " bytes, over its limit of ", limits_.max_total_bytes, " bytes"));
    } else if (missing > 0) {
      total_bytes_ += bytes;
      id = next_id_++;
      for (const std::string& key : keys) by_key_[FullKey{std::string(ns), key}].push_back(id);
      by_deadline_.emplace(deadline, id);
      waiters_.emplace(
          id, Waiter{std::string(ns), std::move(keys), missing, deadline, std::move(done)});
      return id;
    }
  }
  done(invalid);  // OK when every key was already set
  return 0;
}

void KvTable::RemoveWaiterLocked(WaiterId id) {
  auto w = waiters_.find(id);
  if (w == waiters_.end()) return;
  for (const std::string& key : w->second.keys) {
    auto list = by_key_.find(FullKey{w->second.ns, key});
    if (list == by_key_.end()) continue;
    auto& ids = list->second;
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
    if (ids.empty()) by_key_.erase(list);
  }
  by_deadline_.erase({w->second.deadline, id});
  total_bytes_ -= WaiterBytes(w->second.ns, w->second.keys);
  waiters_.erase(w);
}

bool KvTable::CancelWaiter(WaiterId id, const absl::Status& status) {
  WaitCallback done;
  {
    absl::MutexLock lock(&mu_);
    auto w = waiters_.find(id);
    if (w == waiters_.end()) return false;
    done = std::move(w->second.done);
    RemoveWaiterLocked(id);
  }
  done(status);
  return true;
}

std::string KvTable::MissingMessageLocked(const Waiter& waiter) const {
  std::vector<std::string> missing;
  for (const std::string& key : waiter.keys) {
    if (!data_.contains(FullKey{waiter.ns, key})) missing.push_back(absl::StrCat("\"", key, "\""));
  }
  return absl::StrCat("wait for store keys: deadline exceeded; still missing: ",
                      absl::StrJoin(missing, ", "));
}

absl::Time KvTable::ExpireWaiters(absl::Time now) {
  Ready ready;
  absl::Time next = absl::InfiniteFuture();
  {
    absl::MutexLock lock(&mu_);
    while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
      const WaiterId id = by_deadline_.begin()->second;
      Waiter& waiter = waiters_.at(id);
      ready.emplace_back(std::move(waiter.done),
                         absl::DeadlineExceededError(MissingMessageLocked(waiter)));
      RemoveWaiterLocked(id);
    }
    if (!by_deadline_.empty()) next = by_deadline_.begin()->first;
  }
  Run(ready);
  return next;
}

void KvTable::FailAll(const absl::Status& status) {
  Ready ready;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [id, waiter] : waiters_) {
      ready.emplace_back(std::move(waiter.done), status);
      total_bytes_ -= WaiterBytes(waiter.ns, waiter.keys);
    }
    waiters_.clear();
    by_key_.clear();
    by_deadline_.clear();
  }
  Run(ready);
}

void KvTable::DropNamespace(std::string_view ns) {
  Ready ready;
  absl::MutexLock lock(&mu_);
  std::vector<FullKey> doomed;
  for (const auto& [key, value] : data_) {
    if (key.ns == ns) doomed.push_back(key);
  }
  for (const FullKey& key : doomed) EraseLocked(key, ready);
}

std::int64_t KvTable::total_bytes() const {
  absl::MutexLock lock(&mu_);
  return total_bytes_;
}

std::size_t KvTable::pending_waiters() const {
  absl::MutexLock lock(&mu_);
  return waiters_.size();
}

}  // namespace accel::rendezvous
