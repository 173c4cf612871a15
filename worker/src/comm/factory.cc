// Backend choice. Which backends exist is decided at build time:
// ACCEL_HAVE_GLOO / ACCEL_HAVE_NCCL / ACCEL_HAVE_MPI are set by worker/CMakeLists.txt.
#include "worker/src/comm/factory.h"

#include <unistd.h>

#include <memory>
#include <string>

#include "accel/error.h"
#include "common/backend.h"
#include "common/env_contract.h"
#include "common/env_reader.h"

namespace accel::worker {
namespace {

std::string Subject(const GroupSpec& spec) {
  return "rank " + std::to_string(spec.rank) + " of " + std::to_string(spec.size);
}

Kv& RequireKv(Kv* kv, const char* backend, const GroupSpec& spec) {
  if (kv == nullptr) {
    throw Error(std::string("connect ") + backend, Subject(spec),
                "no rendezvous store: set ACCEL_STORE_ENDPOINT (the launcher does)");
  }
  return *kv;
}

}  // namespace

bool StartedByMpi() {
  return env::Get("OMPI_COMM_WORLD_SIZE") != nullptr || env::Get("PMI_SIZE") != nullptr ||
         env::Get("PMIX_RANK") != nullptr || env::Get("PMI_RANK") != nullptr;
}

Backend ChooseBackend(Backend requested, const c10::Device& device, bool world_from_mpi) {
  if (requested != Backend::kAuto) return requested;
  return ParseBackend(std::string(AutoBackend(device.is_cuda(), world_from_mpi)));
}

bool UseSharedMemory(SharedMemory setting, Backend backend, int world) {
  if (world <= 1 || setting == SharedMemory::kOff) return false;
  if (backend == Backend::kGloo) return true;
  return backend == Backend::kNccl && setting == SharedMemory::kOn;
}

std::unique_ptr<Communicator> MakeCommunicator(Backend backend, const c10::Device& device,
                                               const GroupSpec& spec, Kv* kv) {
  if (spec.size == 1) return MakeLocalCommunicator();
  if (kv != nullptr && UseSharedMemory(spec.shared_memory, backend, spec.size)) {
    return MakeShmCommunicator(*kv, spec, backend, device);
  }
  switch (backend) {
    case Backend::kGloo:
#if ACCEL_HAVE_GLOO
    {
      const char* addr = env::Get(env::kMasterAddr);
      const char* local = env::Get(env::kLocalAddr);
      const std::string master = addr != nullptr ? addr : "";
      // Bind where the launcher says the other machines reach us; a job on one machine talks
      // over loopback; otherwise (no launcher) bind to this host's name.
      std::string host = "127.0.0.1";
      if (local != nullptr) {
        host = local;
      } else if (!master.empty() && master != "localhost" && master.rfind("127.", 0) != 0) {
        char name[256] = {};
        if (::gethostname(name, sizeof(name) - 1) == 0) host = name;
      }
      return MakeGlooCommunicator(RequireKv(kv, "gloo", spec), spec, host);
    }
#else
      throw Error("connect gloo", Subject(spec), "this libaccel was built without Gloo");
#endif
    case Backend::kNccl:
#if ACCEL_HAVE_NCCL
      if (!device.is_cuda()) throw Error("connect nccl", Subject(spec), "device is not CUDA");
      return MakeNcclCommunicator(&RequireKv(kv, "nccl", spec), spec,
                                  device.index() < 0 ? 0 : device.index());
#else
      throw Error("connect nccl", Subject(spec), "this libaccel was built without NCCL");
#endif
    case Backend::kMpi:
#if ACCEL_HAVE_MPI
      return MakeMpiCommunicator(spec);
#else
      throw Error("connect mpi", Subject(spec), "this libaccel was built without MPI");
#endif
    case Backend::kAuto:
      break;
  }
  throw Error("connect", Subject(spec), "no backend");
}

}  // namespace accel::worker
