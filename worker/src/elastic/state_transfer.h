// The training state sent over the communicator when the membership changes in place
// (docs/libaccel.md "In-place recovery"): every rank of the new world says which step it holds;
// the lowest rank with the newest one sends its state (modules, optimizers, counters, loss scale,
// data position: what a checkpoint holds but the RNG, which stays each rank's own) to the ranks
// that lack it: survivors a step behind, and joiners, which hold none. Internal to libaccel.
#ifndef ACCEL_WORKER_ELASTIC_STATE_TRANSFER_H_
#define ACCEL_WORKER_ELASTIC_STATE_TRANSFER_H_

#include <cstdint>
#include <string>

#include "worker/src/accelerator_state.h"

namespace accel::internal {

// What the ranks agreed on.
struct Agreement {
  bool same = true;  // every rank held the same step and data position (nothing was sent)
  int source = 0;    // the rank whose state every rank holds now
  std::int64_t steps = 0;
  std::int64_t epoch = 0;  // the data position to resume from: the source's
  std::int64_t position = 0;
  int joiners = 0;  // ranks that held no state
};

// Collective over s.comm (the new world). A rank with `has_state` offers s's state; a rank
// without (a joiner) gets the source's serialized state in `*received` and loads nothing. A
// survivor whose step or data position differs from the source's loads the source's state into
// s. Throws accel::Error when no rank holds a state.
Agreement AgreeOnState(AcceleratorState& s, bool has_state, std::string* received);

// The serialized form AgreeOnState sends: "model_<i>", "optimizer_<i>" and "meta" archives.
std::string SerializeTrainingState(AcceleratorState& s);
void LoadTrainingState(AcceleratorState& s, const std::string& bytes);

}  // namespace accel::internal

#endif  // ACCEL_WORKER_ELASTIC_STATE_TRANSFER_H_
