// Whether the process's BLAS fights LibTorch's OpenMP threads for the cores.
//
// LibTorch's CPU threads are OpenMP threads. The pthreads build of OpenBLAS (Debian's default)
// runs threads of its own for each GEMM while libgomp's threads still spin after LibTorch's
// parallel regions, so with several of each a CPU process can train several times slower than
// with one thread (bench/README.md, ddp_bench: 1,940 vs 6,788 samples/s). The OpenMP build
// shares LibTorch's threads and has no such problem. Nothing here depends on LibTorch: the
// caller passes its thread count.
#ifndef ACCEL_WORKER_BLAS_THREADS_H_
#define ACCEL_WORKER_BLAS_THREADS_H_

#include <string>

namespace accel::worker {

enum class BlasThreading { kNone, kSequential, kPthreads, kOpenMp, kUnknown };

struct LoadedBlas {
  BlasThreading threading = BlasThreading::kNone;  // kNone: no OpenBLAS in this process
  int threads = 0;                                 // its thread count (openblas_get_num_threads)
};

// Asks the OpenBLAS loaded in this process, if any, how it was built and how many threads it
// uses (its own openblas_get_parallel and openblas_get_num_threads, found with dlsym).
LoadedBlas FindLoadedBlas();

// Returns the one-line notice (no trailing newline) when `blas` is the pthreads build with more
// than one thread and `omp_threads` (LibTorch's intra-op threads) is more than one; else "".
std::string BlasContentionNotice(const LoadedBlas& blas, int omp_threads);

}  // namespace accel::worker

#endif  // ACCEL_WORKER_BLAS_THREADS_H_
