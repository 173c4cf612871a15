#include "worker/src/blas_threads.h"

#include <dlfcn.h>

namespace accel::worker {

LoadedBlas FindLoadedBlas() {
  using IntFn = int (*)();
  auto parallel = reinterpret_cast<IntFn>(dlsym(RTLD_DEFAULT, "openblas_get_parallel"));
  if (parallel == nullptr) return {};
  LoadedBlas blas;
  switch (parallel()) {  // OpenBLAS's own numbering
    case 0:
      blas.threading = BlasThreading::kSequential;
      break;
    case 1:
      blas.threading = BlasThreading::kPthreads;
      break;
    case 2:
      blas.threading = BlasThreading::kOpenMp;
      break;
    default:
      blas.threading = BlasThreading::kUnknown;
  }
  auto threads = reinterpret_cast<IntFn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  blas.threads = threads != nullptr ? threads() : 0;
  return blas;
}

std::string BlasContentionNotice(const LoadedBlas& blas, int omp_threads) {
  if (blas.threading != BlasThreading::kPthreads || blas.threads <= 1 || omp_threads <= 1) {
    return "";
  }
  return "[accel] OpenBLAS here is its pthreads build: its " + std::to_string(blas.threads) +
         " threads contend with LibTorch's " + std::to_string(omp_threads) +
         " OpenMP threads, which can make CPU training several times slower; use OpenBLAS's "
         "OpenMP build (Debian: libopenblas0-openmp, selected with update-alternatives, as "
         "accel-launch's scripts/install-deps does) or set OPENBLAS_NUM_THREADS=1";
}

}  // namespace accel::worker
