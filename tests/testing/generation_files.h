// Test helpers for the generation files accel-launch writes for in-place recovery: one machine's
// Generation as the launcher would write it (tests that play the launcher: tests/mp/worker).
#ifndef ACCEL_TESTS_TESTING_GENERATION_FILES_H_
#define ACCEL_TESTS_TESTING_GENERATION_FILES_H_

#include <cstdint>

#include "worker/src/elastic/generation.h"

namespace accel::testing {

// Generation `number` of `machines` machines of `per_machine` ranks, seen by `machine`; its store
// namespace is the generation's own and its MASTER_PORT 29500 + number.
inline worker::Generation MakeGeneration(std::int64_t number, int machines, int machine,
                                         int per_machine, bool joining = false) {
  worker::Generation g;
  g.number = number;
  g.world = machines * per_machine;
  g.base_rank = machine * per_machine;
  g.group_rank = machine;
  g.group_world = machines;
  g.local_world = per_machine;
  g.store_attempt = number;
  g.master_port = 29500 + static_cast<int>(number);
  g.joining = joining;
  return g;
}

}  // namespace accel::testing

#endif  // ACCEL_TESTS_TESTING_GENERATION_FILES_H_
