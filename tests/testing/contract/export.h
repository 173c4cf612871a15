// The reference's answer for a Sequence, as one JSON line for tests/testing/contract/
// ddp_check.py, which replays the same sequence, initial parameters and data with PyTorch's own
// DistributedDataParallel and GradScaler (Python) and compares: the check of the reference
// itself (contract_rank export ...).
#ifndef ACCEL_TESTS_TESTING_CONTRACT_EXPORT_H_
#define ACCEL_TESTS_TESTING_CONTRACT_EXPORT_H_

#include <string>

#include "tests/testing/contract/sequence.h"

namespace accel::contract {

// {"seed", "world", the sequence's fields, "steps": [...], "init": {name: values},
//  "data": [micro][k][rank] {"x", "y", "c"}, "ref": {"params", "grads", "synced", "stepped",
//  "clips", "scale"}}: parameters by name (each tensor once), values flattened, float32 printed
// exactly (%.9g); a gradient without a value is null.
std::string ExportSequence(const Sequence& seq, int world);

}  // namespace accel::contract

#endif  // ACCEL_TESTS_TESTING_CONTRACT_EXPORT_H_
