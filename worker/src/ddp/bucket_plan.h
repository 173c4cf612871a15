// Bucket assignment for DDP gradient all-reduce (pure; no LibTorch, unit-tested).
//
// Parameters are taken in reverse registration order (roughly the order autograd produces their
// gradients) and packed greedily: a bucket is closed once its size reaches its cap (the first
// bucket's cap is small so the first all-reduce starts early), or when the next parameter has a
// different dtype/device key (a bucket is one flat tensor). Like torch's
// compute_bucket_assignment_by_size, a single parameter larger than the cap gets a bucket of its
// own, and a bucket may exceed its cap by its last parameter.
#ifndef ACCEL_WORKER_DDP_BUCKET_PLAN_H_
#define ACCEL_WORKER_DDP_BUCKET_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace accel::worker {

struct ParamInfo {
  std::int64_t bytes = 0;
  int key = 0;  // dtype/device class: parameters with different keys never share a bucket
};

// Returns buckets of parameter indices (indices into `params`, registration order), in launch
// order. Every parameter appears in exactly one bucket.
std::vector<std::vector<std::size_t>> PlanBuckets(const std::vector<ParamInfo>& params,
                                                  std::int64_t first_bucket_bytes,
                                                  std::int64_t bucket_bytes);

}  // namespace accel::worker

#endif  // ACCEL_WORKER_DDP_BUCKET_PLAN_H_
