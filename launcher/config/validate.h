// Cross-field validation of a resolved Config (one function returns all
// problems). Each diagnostic points at the origin of the offending value (source.h).
#ifndef ACCEL_LAUNCHER_CONFIG_VALIDATE_H_
#define ACCEL_LAUNCHER_CONFIG_VALIDATE_H_

#include <vector>

#include "launcher/config/config.h"
#include "launcher/config/diagnostics.h"
#include "launcher/config/source.h"

namespace accel::launcher {

// Returns every problem: negative or zero counts, machine_rank outside 0..num_machines-1, a port
// outside 0..65535, num_processes not divisible by num_machines, a multi-machine job without
// main_process_ip or with port 0, ranks_filter outside the world, incomplete TLS settings, a
// log_dir that cannot be created or written (the one check that reads the file system).
std::vector<Diagnostic> ValidateConfig(const Config& config, const SourceMap& sources);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_CONFIG_VALIDATE_H_
