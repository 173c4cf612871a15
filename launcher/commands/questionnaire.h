// `accel-launch config`: accelerate's questionnaire (same questions, same order, defaults in
// brackets, re-asking on bad input), reading answers line by line from any stream, so it works
// at a terminal and with answers piped on stdin.
#ifndef ACCEL_LAUNCHER_COMMANDS_QUESTIONNAIRE_H_
#define ACCEL_LAUNCHER_COMMANDS_QUESTIONNAIRE_H_

#include <iosfwd>
#include <vector>

#include "absl/status/statusor.h"
#include "common/device_info.h"
#include "launcher/config/config.h"

namespace accel::launcher {

// Asks, in order: compute environment; machine type; number of machines; this machine's rank,
// main process IP and port, same network, rendezvous backend (multi-machine only); total
// processes (default machines × local GPUs; prints the per-machine count); GPU ids; mixed
// precision (warns that bf16 needs compute capability >= 8.0); gradient accumulation steps;
// DeepSpeed (yes explains it is not supported). `gpus` are this machine's GPUs.
// Returns the answers as a Config; fails when the input ends before every question is answered.
absl::StatusOr<Config> RunQuestionnaire(std::istream& in, std::ostream& out,
                                        const std::vector<GpuInfo>& gpus);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_COMMANDS_QUESTIONNAIRE_H_
