// Communicator construction. Each Make* function is defined in its backend's file; the factory
// picks one from the options, the device and the environment.
#ifndef ACCEL_WORKER_COMM_FACTORY_H_
#define ACCEL_WORKER_COMM_FACTORY_H_

#include <c10/core/Device.h>

#include <chrono>
#include <memory>
#include <string>

#include "accel/communicator.h"
#include "accel/defaults.h"
#include "accel/options.h"
#include "worker/src/store/kv.h"

namespace accel::worker {

// Where and how a process group is formed.
struct GroupSpec {
  int rank = 0;
  int size = 1;
  std::string key_prefix;  // unique per group within the store namespace, e.g. "pg0/"
  std::chrono::milliseconds timeout = defaults::kConnectTimeout;
  SharedMemory shared_memory = SharedMemory::kAuto;
  // Abort() from another thread must wake a call blocked on a peer (in-place recovery's
  // generation watch): Gloo then runs each collective on its own thread.
  bool abortable = false;
};

// True when the group should run over shared memory inside each machine (MakeShmCommunicator):
// kAuto for the gloo backend (CPU tensors), kOn for gloo and nccl; never for MPI (its own
// shared memory transport does this) or a world of 1.
bool UseSharedMemory(SharedMemory setting, Backend backend, int world);

// Returns true when this process was started by an MPI launcher (OMPI_COMM_WORLD_*, PMI_*,
// PMIX_RANK) so that MPI_Init can form the world.
bool StartedByMpi();

// Returns `requested` unless it is kAuto; kAuto becomes common/backend.h's AutoBackend: NCCL for a
// CUDA device, MPI only when MPI formed the world (`world_from_mpi`: no RANK/WORLD_SIZE, started
// by mpirun/srun directly; a worker of `srun accel-launch` inherits PMI_* but gets RANK from the
// launcher and must use the launcher's store), else Gloo.
Backend ChooseBackend(Backend requested, const c10::Device& device, bool world_from_mpi);

// Returns the communicator of `backend` (chosen by ChooseBackend: not kAuto); throws when it is
// not compiled in. A world of 1 always gets the local communicator (no peers, no store). `kv` may
// be null for MPI and for a world of 1.
std::unique_ptr<Communicator> MakeCommunicator(Backend backend, const c10::Device& device,
                                               const GroupSpec& spec, Kv* kv);

// Shared memory among each machine's ranks (machines found through `kv`); with several machines
// hierarchical, with `inter` (gloo or nccl on `device`) among one leader per machine. Blocks until
// every rank is connected (deadline spec.timeout).
std::unique_ptr<Communicator> MakeShmCommunicator(Kv& kv, const GroupSpec& spec, Backend inter,
                                                  const c10::Device& device);

// World of 1: every collective is the identity (AllGather adds the leading dimension).
std::unique_ptr<Communicator> MakeLocalCommunicator();

// Gloo over TCP; blocks until all ranks connected through `kv` (deadline spec.timeout).
// Binds to GLOO_SOCKET_IFNAME when set, else to `hostname` (127.0.0.1 for local jobs). Sets
// SIGPIPE to ignored when it has its default action (a dead peer must fail a collective, not kill
// the process); a handler the program installed is kept.
std::unique_ptr<Communicator> MakeGlooCommunicator(Kv& kv, const GroupSpec& spec,
                                                   const std::string& hostname);

// NCCL on CUDA device `device_index`; the unique id comes from rank 0 through `kv` (null for a
// world of 1: created locally).
std::unique_ptr<Communicator> MakeNcclCommunicator(Kv* kv, const GroupSpec& spec, int device_index);

// MPI_COMM_WORLD (MPI_Init_thread on first use, MPI_Finalize at exit).
std::unique_ptr<Communicator> MakeMpiCommunicator(const GroupSpec& spec);

}  // namespace accel::worker

#endif  // ACCEL_WORKER_COMM_FACTORY_H_
