#include "rendezvous/store/prefix_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/absl_view.h"

namespace accel::rendezvous {

PrefixStore::PrefixStore(std::string prefix, Store& base)
    : prefix_(absl::StrCat(prefix, "/")), base_(base) {}

std::string PrefixStore::Full(std::string_view key) const { return absl::StrCat(prefix_, Av(key)); }

absl::Status PrefixStore::Strip(const absl::Status& status) const {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrReplaceAll(status.message(), {{"\"" + prefix_, "\""}}));
}

absl::Status PrefixStore::Set(std::string_view key, std::string_view value) {
  return Strip(base_.Set(Full(key), value));
}

absl::StatusOr<std::string> PrefixStore::Get(std::string_view key, absl::Duration timeout) {
  absl::StatusOr<std::string> value = base_.Get(Full(key), timeout);
  if (!value.ok()) return Strip(value.status());
  return value;
}

absl::StatusOr<std::int64_t> PrefixStore::Add(std::string_view key, std::int64_t delta) {
  absl::StatusOr<std::int64_t> value = base_.Add(Full(key), delta);
  if (!value.ok()) return Strip(value.status());
  return value;
}

absl::Status PrefixStore::Wait(const std::vector<std::string>& keys, absl::Duration timeout) {
  std::vector<std::string> full;
  full.reserve(keys.size());
  for (const std::string& key : keys) full.push_back(Full(key));
  return Strip(base_.Wait(full, timeout));
}

absl::StatusOr<bool> PrefixStore::Delete(std::string_view key) {
  absl::StatusOr<bool> existed = base_.Delete(Full(key));
  if (!existed.ok()) return Strip(existed.status());
  return existed;
}

absl::StatusOr<std::string> PrefixStore::CompareSet(std::string_view key, std::string_view expected,
                                                    std::string_view desired) {
  absl::StatusOr<std::string> value = base_.CompareSet(Full(key), expected, desired);
  if (!value.ok()) return Strip(value.status());
  return value;
}

}  // namespace accel::rendezvous
