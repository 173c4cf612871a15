#include "rendezvous/join/types.h"

#include "absl/strings/str_cat.h"

namespace accel::rendezvous {

std::string StoreNamespace(const std::string& run_id, std::int64_t attempt) {
  return absl::StrCat(run_id, "/", attempt);
}

}  // namespace accel::rendezvous
