// NcclCommunicator on a real GPU: every collective at a world of 1 in fp32, fp16 and bf16 with
// exact inputs; a communicator refuses work after Abort(); and a world-2 communicator whose
// second rank never arrives gives up within its deadline and says so.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "accel/error.h"
#include "tests/testing/gpu_test_util.h"
#include "worker/src/comm/factory.h"

namespace accel {
namespace {

using std::chrono::milliseconds;

const c10::Device kCuda(c10::kCUDA, 0);
constexpr milliseconds kTimeout{60000};

// Skips (or fails) without a GPU or without NCCL compiled into libaccel.
#define ACCEL_SKIP_WITHOUT_NCCL()                                                              \
  do {                                                                                         \
    ACCEL_SKIP_WITHOUT_GPU();                                                                  \
    if (!ACCEL_HAVE_NCCL) {                                                                    \
      ACCEL_GPU_SKIP(                                                                          \
          "libaccel was built without NCCL (nccl.h, libnccl or the CUDA toolkit not found at " \
          "configure time)");                                                                  \
    }                                                                                          \
  } while (0)

#if ACCEL_HAVE_NCCL
std::unique_ptr<Communicator> WorldOfOne(const std::string& prefix) {
  return worker::MakeNcclCommunicator(nullptr, worker::GroupSpec{0, 1, prefix, kTimeout}, 0);
}

// Runs every collective on integers that `dtype` holds exactly (0 .. count-1) and checks the
// results for equality: at a world of 1 each reduction is the identity, the gather adds a leading
// dimension of 1, the broadcast keeps the root's values.
void CheckEveryCollective(at::ScalarType dtype, int64_t count) {
  auto comm = WorldOfOne(std::string("gpu_test/") + c10::toString(dtype) + "/");
  ASSERT_EQ(comm->name(), "nccl");
  ASSERT_EQ(comm->size(), 1);
  const at::Tensor expected = at::arange(count, at::TensorOptions().dtype(dtype).device(kCuda));
  for (auto op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
    at::Tensor t = expected.clone();
    comm->AllReduce(t, op, kTimeout);
    EXPECT_TRUE(at::equal(t.cpu(), expected.cpu())) << c10::toString(dtype) << " " << ToString(op);
  }
  at::Tensor b = expected.flip(0).contiguous();
  comm->Broadcast(b, 0, kTimeout);
  EXPECT_TRUE(at::equal(b.cpu(), expected.flip(0).cpu())) << "broadcast";
  at::Tensor g = comm->AllGather(expected.view({-1, 2}), kTimeout);
  EXPECT_EQ(g.sizes(), at::IntArrayRef({1, count / 2, 2}));
  EXPECT_TRUE(at::equal(g[0].reshape(-1).cpu(), expected.cpu())) << "all-gather";
  comm->Barrier(kTimeout);
}
#endif

TEST(GpuNcclTest, WorldOfOneCollectivesFp32) {
  ACCEL_SKIP_WITHOUT_NCCL();
#if ACCEL_HAVE_NCCL
  CheckEveryCollective(at::kFloat, 1 << 20);
#endif
}

TEST(GpuNcclTest, WorldOfOneCollectivesFp16) {
  ACCEL_SKIP_WITHOUT_NCCL();
#if ACCEL_HAVE_NCCL
  CheckEveryCollective(at::kHalf, 2048);  // integers up to 2048 are exact in fp16
#endif
}

TEST(GpuNcclTest, WorldOfOneCollectivesBf16) {
  ACCEL_SKIP_WITHOUT_NCCL();
#if ACCEL_HAVE_NCCL
  CheckEveryCollective(at::kBFloat16, 256);  // integers up to 256 are exact in bf16
#endif
}

TEST(GpuNcclTest, AbortedCommunicatorRefusesWork) {
  ACCEL_SKIP_WITHOUT_NCCL();
#if ACCEL_HAVE_NCCL
  auto comm = WorldOfOne("gpu_test/abort/");
  at::Tensor t = at::ones({16}, kCuda);
  comm->AllReduce(t, ReduceOp::kSum, kTimeout);
  comm->Abort();
  comm->Abort();  // idempotent
  try {
    comm->AllReduce(t, ReduceOp::kSum, kTimeout);
    ADD_FAILURE() << "an aborted communicator ran an all-reduce";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aborted"), std::string::npos) << e.what();
  }
  comm.reset();  // destroying an aborted communicator must not touch the freed NCCL comm
#endif
}

// Rank 0 of a world of 2 whose rank 1 never starts: the non-blocking init must give up at the
// deadline, abort, and report it, instead of waiting for the peer forever.
TEST(GpuNcclTest, MissingPeerAbortsAtTheDeadline) {
  ACCEL_SKIP_WITHOUT_NCCL();
#if ACCEL_HAVE_NCCL
  const milliseconds deadline{3000};
  const auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    auto comm = worker::MakeNcclCommunicator(
        nullptr, worker::GroupSpec{0, 2, "gpu_test/lonely/", deadline}, 0);
    ADD_FAILURE() << "a world of 2 connected with one rank";
  } catch (const Error& e) {
    message = e.what();
  }
  const auto waited =
      std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
  std::printf("missing peer: gave up after %lld ms: %s\n", static_cast<long long>(waited.count()),
              message.c_str());
  EXPECT_NE(message.find("deadline of 3000 ms exceeded"), std::string::npos) << message;
  EXPECT_GE(waited, deadline);
  EXPECT_LT(waited, 2 * deadline) << "the abort itself must be quick";
#endif
}

}  // namespace
}  // namespace accel
