// The trainer's micro-step schedule, shared by the training loop and resume: a micro-step syncs
// (all-reduce + optimizer step) every `accumulation` batches and on the last batch of an epoch,
// as accelerate does. Pure arithmetic, no LibTorch.
#ifndef ACCEL_EXAMPLES_TRAIN_SCHEDULE_H_
#define ACCEL_EXAMPLES_TRAIN_SCHEDULE_H_

#include <cstdint>

namespace accel::examples {

// Optimizer steps in one epoch of `batches` batches: ceil(batches / accumulation).
inline std::int64_t StepsPerEpoch(std::int64_t batches, std::int64_t accumulation) {
  return (batches + accumulation - 1) / accumulation;
}

struct SchedulePosition {
  std::int64_t epoch = 0;
  std::int64_t batch = 0;  // the first batch of `epoch` not yet trained on
};

// Where training continues after `steps_done` optimizer steps.
inline SchedulePosition PositionAfter(std::int64_t steps_done, std::int64_t batches,
                                      std::int64_t accumulation) {
  const std::int64_t per_epoch = StepsPerEpoch(batches, accumulation);
  SchedulePosition position;
  position.epoch = steps_done / per_epoch;
  position.batch = (steps_done % per_epoch) * accumulation;
  return position;
}

}  // namespace accel::examples

#endif  // ACCEL_EXAMPLES_TRAIN_SCHEDULE_H_
