// The trainer's micro-step schedule: a micro-step syncs (all-reduce + optimizer step) every
// `accumulation` batches and on the last batch of an epoch, as accelerate does. (Resume needs no
// arithmetic here: load_state restores where the data stood.) Pure arithmetic, no LibTorch.
#ifndef ACCEL_EXAMPLES_TRAIN_SCHEDULE_H_
#define ACCEL_EXAMPLES_TRAIN_SCHEDULE_H_

#include <cstdint>

namespace accel::examples {

// Optimizer steps in one epoch of `batches` batches: ceil(batches / accumulation).
inline std::int64_t StepsPerEpoch(std::int64_t batches, std::int64_t accumulation) {
  return (batches + accumulation - 1) / accumulation;
}

}  // namespace accel::examples

#endif  // ACCEL_EXAMPLES_TRAIN_SCHEDULE_H_
