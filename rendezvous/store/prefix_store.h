// PrefixStore: a view of another Store in which every key is "<prefix>/<key>" (Gloo-style).
//
// Thread-safe as the wrapped store is. Does not own it: `base` must outlive the PrefixStore.
// Error messages name the key as the caller wrote it.
#ifndef ACCEL_RENDEZVOUS_STORE_PREFIX_STORE_H_
#define ACCEL_RENDEZVOUS_STORE_PREFIX_STORE_H_

#include <string>

#include "rendezvous/store/store.h"

namespace accel::rendezvous {

class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, Store& base);

  absl::Status Set(std::string_view key, std::string_view value) override;
  absl::StatusOr<std::string> Get(std::string_view key, absl::Duration timeout) override;
  absl::StatusOr<std::int64_t> Add(std::string_view key, std::int64_t delta) override;
  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) override;
  absl::StatusOr<bool> Delete(std::string_view key) override;
  absl::StatusOr<std::string> CompareSet(std::string_view key, std::string_view expected,
                                         std::string_view desired) override;

 private:
  std::string Full(std::string_view key) const;
  absl::Status Strip(const absl::Status& status) const;

  std::string prefix_;  // ends with '/'
  Store& base_;
};

}  // namespace accel::rendezvous

#endif  // ACCEL_RENDEZVOUS_STORE_PREFIX_STORE_H_
