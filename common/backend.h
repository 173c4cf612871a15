// AutoBackend: which collective backend "auto" means (DESIGN.md §7). The launcher's plan puts it
// in ACCEL_BACKEND; libaccel applies it when a process runs without the launcher. Standard
// library only and header-only (libaccel's worker-only build has no abseil).
#ifndef ACCEL_COMMON_BACKEND_H_
#define ACCEL_COMMON_BACKEND_H_

#include <string_view>

namespace accel {

// Returns "nccl" for a CUDA device; else "mpi" when MPI formed the world (mpirun/srun started
// the process directly: no RANK/WORLD_SIZE from a launcher); else "gloo".
constexpr std::string_view AutoBackend(bool cuda_device, bool world_from_mpi) {
  if (cuda_device) return "nccl";
  if (world_from_mpi) return "mpi";
  return "gloo";
}

}  // namespace accel

#endif  // ACCEL_COMMON_BACKEND_H_
