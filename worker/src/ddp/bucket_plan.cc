#include "worker/src/ddp/bucket_plan.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace accel::worker {

std::vector<std::vector<std::size_t>> PlanBuckets(const std::vector<ParamInfo>& params,
                                                  std::int64_t first_bucket_bytes,
                                                  std::int64_t bucket_bytes) {
  std::vector<std::vector<std::size_t>> buckets;
  std::vector<std::size_t> current;
  std::int64_t current_bytes = 0;
  int current_key = 0;
  auto close = [&] {
    if (current.empty()) return;
    buckets.push_back(std::move(current));
    current.clear();
    current_bytes = 0;
  };
  for (std::size_t n = params.size(); n-- > 0;) {
    const ParamInfo& p = params[n];
    if (!current.empty() && p.key != current_key) close();
    current_key = p.key;
    current.push_back(n);
    current_bytes += p.bytes;
    const std::int64_t cap = buckets.empty() ? first_bucket_bytes : bucket_bytes;
    if (current_bytes >= cap) close();
  }
  close();
  return buckets;
}

}  // namespace accel::worker
