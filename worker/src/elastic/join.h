// A worker that joins a running in-place job (docs/libaccel.md "In-place recovery"): the
// launcher started it with a generation file that says `joining` (a machine added during
// training, or one that comes back). Its Accelerator connects to that generation's world, where
// the ranks that kept their workers are in recover(), and receives the training state from them
// over the communicator (no disk). The state is applied as the program prepares: each module
// (instead of rank 0's broadcast), each optimizer, the loader's sampler (the job's data
// position); the step counters and the loss scale at once. The RNG stays the process's own, as a
// rank that a checkpoint's world lacked keeps its own on load_state. Internal to libaccel.
#ifndef ACCEL_WORKER_ELASTIC_JOIN_H_
#define ACCEL_WORKER_ELASTIC_JOIN_H_

#include <optional>

#include "worker/src/accelerator_state.h"
#include "worker/src/elastic/generation.h"

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace accel::internal {

// Returns the generation this process joins when its generation file says `joining`; nullopt
// otherwise (no file, a first start, or a restart of every worker).
std::optional<worker::Generation> JoiningGeneration(const AcceleratorState& s);

// Connects s to generation `g` (its world, ranks, store namespace) and receives the training
// state (collective with the others' recover()). When that fails (a newer generation came while
// it started or connected: its waits end at once), joins the next generation, as recover()
// does. Throws accel::Error when none comes within the file's recover_timeout_ms.
void JoinRunningJob(AcceleratorState& s, worker::Generation g);

// Whether this process joined a running job and has not completed a step since.
bool Joined(const AcceleratorState& s);

// prepare(module) in a joined process: loads the job's next module (in prepare order) into
// `module`. Returns false, changing nothing, when this process did not join (the caller then
// broadcasts rank 0's parameters). Throws when the job had fewer modules.
bool LoadJoinedModule(AcceleratorState& s, torch::nn::Module& module);

// prepare(optimizer), first registration, in a joined process: loads the job's next optimizer
// state. Does nothing when this process did not join. Throws when the job had fewer.
void LoadJoinedOptimizer(AcceleratorState& s, torch::optim::Optimizer& optimizer);

// After a sampler is made: resumes it at the job's data position, once.
void ResumeJoinedData(AcceleratorState& s);

// The first completed step of a joined process: throws accel::Error when the program prepared
// fewer modules or optimizers than the job had (the state would be partly its own); then forgets
// the received state.
void FinishJoin(AcceleratorState& s);

}  // namespace accel::internal

#endif  // ACCEL_WORKER_ELASTIC_JOIN_H_
