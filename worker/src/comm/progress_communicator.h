// WithProgress: a Communicator that counts every collective in the progress file (started before
// it is issued, done once it returned), so the launcher can tell a rank waiting in a collective
// from the rank that never reached it. Wraps any backend; everything else passes through.
#ifndef ACCEL_WORKER_COMM_PROGRESS_COMMUNICATOR_H_
#define ACCEL_WORKER_COMM_PROGRESS_COMMUNICATOR_H_

#include <memory>

#include "accel/communicator.h"
#include "worker/src/progress_file.h"

namespace accel::worker {

// Returns `inner` with its collectives counted in `progress` (shared: it outlives the wrapper).
std::unique_ptr<Communicator> WithProgress(std::unique_ptr<Communicator> inner,
                                           std::shared_ptr<ProgressFile> progress);

}  // namespace accel::worker

#endif  // ACCEL_WORKER_COMM_PROGRESS_COMMUNICATOR_H_
