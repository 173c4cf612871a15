// MpiCommunicator: CPU collectives over MPI_COMM_WORLD, for jobs started by mpirun/srun (MPI
// cannot join a world formed any other way).
//
// Deadlines: every collective is the non-blocking variant (MPI_Iallreduce, ...) completed by
// MPI_Test in a loop that sleeps between tests (no spinning) until done or the deadline; on the
// deadline the whole job is aborted with MPI_Abort, the only way MPI offers to cancel a
// collective. MPI is initialized with MPI_THREAD_SERIALIZED on first use (calls come from the
// training thread and the DDP communication thread, never at once: an internal mutex) and
// finalized at process exit.
#include <ATen/ATen.h>
// The C API only: no deprecated C++ bindings (they would need libmpi_cxx).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "accel/error.h"
#include "worker/src/comm/factory.h"

namespace accel::worker {
namespace {

using Clock = std::chrono::steady_clock;

// Initializes MPI once per process and finalizes it at exit.
class MpiRuntime {
 public:
  static MpiRuntime& Get() {
    static MpiRuntime runtime;
    return runtime;
  }
  ~MpiRuntime() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && initialized_here_) MPI_Finalize();
  }
  int provided() const { return provided_; }

 private:
  MpiRuntime() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) {
      MPI_Query_thread(&provided_);
      return;
    }
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided_);
    initialized_here_ = true;
  }
  int provided_ = MPI_THREAD_SINGLE;
  bool initialized_here_ = false;
};

MPI_Datatype MpiType(at::ScalarType t, const std::string& subject) {
  switch (t) {
    case at::kFloat:
      return MPI_FLOAT;
    case at::kDouble:
      return MPI_DOUBLE;
    case at::kInt:
      return MPI_INT32_T;
    case at::kLong:
      return MPI_INT64_T;
    case at::kByte:
      return MPI_UINT8_T;
    default:
      throw Error("mpi collective", subject, std::string("unsupported dtype ") + c10::toString(t));
  }
}

MPI_Op MpiOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return MPI_SUM;
  }
  return MPI_SUM;
}

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(int rank, int size) : rank_(rank), size_(size) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }

  void AllReduce(at::Tensor& tensor, ReduceOp op, std::chrono::milliseconds timeout) override {
    CheckCpu("all-reduce", tensor);
    const auto dtype = tensor.scalar_type();
    if (dtype == at::kHalf || dtype == at::kBFloat16) {
      at::Tensor wide = tensor.to(at::kFloat);
      AllReduce(wide, op, timeout);
      tensor.copy_(wide);
      return;
    }
    Run("all-reduce", timeout, [&](MPI_Request* req) {
      return MPI_Iallreduce(MPI_IN_PLACE, tensor.data_ptr(), static_cast<int>(tensor.numel()),
                            MpiType(dtype, Subject()), MpiOp(op), MPI_COMM_WORLD, req);
    });
    if (op == ReduceOp::kAvg) {
      if (at::isFloatingType(dtype)) {
        tensor.div_(size_);
      } else {
        tensor.div_(size_, "trunc");
      }
    }
  }

  void Broadcast(at::Tensor& tensor, int root, std::chrono::milliseconds timeout) override {
    CheckCpu("broadcast", tensor);
    Run("broadcast", timeout, [&](MPI_Request* req) {
      return MPI_Ibcast(tensor.data_ptr(), static_cast<int>(tensor.nbytes()), MPI_BYTE, root,
                        MPI_COMM_WORLD, req);
    });
  }

  at::Tensor AllGather(const at::Tensor& input, std::chrono::milliseconds timeout) override {
    at::Tensor in = input.contiguous();
    CheckCpu("all-gather", in);
    std::vector<int64_t> shape{size_};
    shape.insert(shape.end(), in.sizes().begin(), in.sizes().end());
    at::Tensor out = at::empty(shape, in.options());
    Run("all-gather", timeout, [&](MPI_Request* req) {
      return MPI_Iallgather(in.data_ptr(), static_cast<int>(in.nbytes()), MPI_BYTE, out.data_ptr(),
                            static_cast<int>(in.nbytes()), MPI_BYTE, MPI_COMM_WORLD, req);
    });
    return out;
  }

  void Barrier(std::chrono::milliseconds timeout) override {
    Run("barrier", timeout, [&](MPI_Request* req) { return MPI_Ibarrier(MPI_COMM_WORLD, req); });
  }

  void Abort() override {
    if (aborted_.exchange(true)) return;
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

 private:
  std::string Subject() const {
    return "(mpi rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ")";
  }

  void CheckCpu(const char* op, const at::Tensor& tensor) const {
    if (!tensor.device().is_cpu()) throw Error(op, Subject(), "tensor is not on the CPU");
    if (!tensor.is_contiguous()) throw Error(op, Subject(), "tensor is not contiguous");
  }

  template <typename Start>
  void Run(const char* op, std::chrono::milliseconds timeout, Start&& start) {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) throw Error(op, Subject(), "communicator was aborted");
    const auto deadline = Clock::now() + timeout;
    MPI_Request request = MPI_REQUEST_NULL;
    int rc = start(&request);
    if (rc != MPI_SUCCESS) throw Error(op, Subject(), ErrorString(rc));
    auto pause = std::chrono::microseconds(10);
    while (true) {
      int done = 0;
      rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) throw Error(op, Subject(), ErrorString(rc));
      if (done) return;
      if (Clock::now() >= deadline) {
        std::fprintf(stderr, "[accel] %s %s: deadline of %lld ms exceeded; aborting the MPI job\n",
                     op, Subject().c_str(), static_cast<long long>(timeout.count()));
        Abort();
        throw Error(op, Subject(), "deadline exceeded");
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(500));
    }
  }

  static std::string ErrorString(int rc) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return std::string(text, static_cast<size_t>(len));
  }

  const int rank_;
  const int size_;
  std::mutex mu_;
  std::atomic<bool> aborted_{false};
};

}  // namespace

std::unique_ptr<Communicator> MakeMpiCommunicator(const GroupSpec& spec) {
  MpiRuntime& runtime = MpiRuntime::Get();
  if (runtime.provided() < MPI_THREAD_SERIALIZED) {
    throw Error("connect mpi", "", "MPI does not provide MPI_THREAD_SERIALIZED");
  }
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != spec.rank || size != spec.size) {
    throw Error("connect mpi", "rank " + std::to_string(spec.rank),
                "MPI_COMM_WORLD is rank " + std::to_string(rank) + " of " + std::to_string(size) +
                    " but the environment says rank " + std::to_string(spec.rank) + " of " +
                    std::to_string(spec.size));
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return std::make_unique<MpiCommunicator>(rank, size);
}

}  // namespace accel::worker
