// The element-wise reduction of the shared-memory all-reduce: one slice, every rank's input in
// rank order (so every rank that reduces the same slice gets bit-identical results), written to
// up to two outputs. fp16 and bf16 accumulate in float32 and round once. Compiled with -O3 so the
// inner loops vectorize.
#ifndef ACCEL_WORKER_COMM_SHM_REDUCE_H_
#define ACCEL_WORKER_COMM_SHM_REDUCE_H_

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <vector>

#include "accel/communicator.h"

namespace accel::worker::shm {

// True when Reduce supports `dtype` (float, double, half, bfloat16, int32, int64, uint8, int8).
bool Supported(c10::ScalarType dtype);

// out[i] = op over k of inputs[k][i], for i < count, over two inputs or more (a group of one rank
// has nothing to reduce; throws accel::Error); kAvg divides the sum by `divisor` (integers:
// truncating). `out2` may be null. An output may alias one input (it is read before written).
void Reduce(c10::ScalarType dtype, ReduceOp op, const std::vector<const void*>& inputs, void* out,
            void* out2, std::int64_t count, int divisor);

}  // namespace accel::worker::shm

#endif  // ACCEL_WORKER_COMM_SHM_REDUCE_H_
