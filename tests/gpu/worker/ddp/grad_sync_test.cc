// GradSync's bucket pipeline over real NCCL when the user trains on a non-default CUDA stream.
//
// Buckets are filled on the stream backward runs on (the user's) and all-reduced from the
// communication thread, whose current stream is the default one. A collective must still start
// only after the bucket's copy has finished on the user's stream (the event-ordering case).
// At a world of 1 an all-reduce is the identity, so a collective that started too early would
// leave the right values in place and prove nothing; the communicator here therefore reads each
// bucket through a real NCCL all-gather (which copies its input into a new tensor: started too
// early, it copies stale values) and writes what it read back. The user's stream is held busy
// before backward, so the gradients exist on the device long after the hooks fired on the host.
#include "worker/src/ddp/grad_sync.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#if ACCEL_TORCH_CUDA
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "tests/testing/gpu_test_util.h"
#include "worker/src/comm/factory.h"

namespace accel {
namespace {

using std::chrono::milliseconds;

#if ACCEL_HAVE_NCCL && ACCEL_TORCH_CUDA
constexpr milliseconds kTimeout{60000};

// Delegates to `inner`, except that AllReduce reads its tensor through AllGather (see above) and
// counts the calls made from threads other than `training_thread`.
class ReadingCommunicator : public Communicator {
 public:
  ReadingCommunicator(Communicator& inner, std::thread::id training_thread)
      : inner_(inner), training_thread_(training_thread) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string name() const override { return "reading(" + inner_.name() + ")"; }
  void AllReduce(at::Tensor& tensor, ReduceOp /*op*/, milliseconds timeout) override {
    if (std::this_thread::get_id() != training_thread_) ++from_comm_thread_;
    at::Tensor seen = inner_.AllGather(tensor, timeout);  // returns once NCCL has finished
    tensor.copy_(seen[0]);
    torch::cuda::synchronize();  // that copy ran on this thread's stream: done before returning
  }
  void Broadcast(at::Tensor& tensor, int root, milliseconds timeout) override {
    inner_.Broadcast(tensor, root, timeout);
  }
  at::Tensor AllGather(const at::Tensor& input, milliseconds timeout) override {
    return inner_.AllGather(input, timeout);
  }
  void Barrier(milliseconds timeout) override { inner_.Barrier(timeout); }
  void Abort() override { inner_.Abort(); }
  int from_comm_thread() const { return from_comm_thread_; }

 private:
  Communicator& inner_;
  std::thread::id training_thread_;
  std::atomic<int> from_comm_thread_{0};
};

std::vector<at::Tensor> Grads(torch::nn::Sequential& model) {
  std::vector<at::Tensor> grads;
  for (const auto& p : model->parameters()) grads.push_back(p.grad().detach().clone());
  return grads;
}

void ClearGrads(torch::nn::Sequential& model) {
  for (auto& p : model->parameters()) p.mutable_grad() = at::Tensor();
}
#endif

TEST(GpuGradSyncTest, BucketsWaitForGradientsMadeOnAUserStream) {
  ACCEL_SKIP_WITHOUT_GPU();
#if !ACCEL_HAVE_NCCL || !ACCEL_TORCH_CUDA
  ACCEL_GPU_SKIP("needs libaccel with NCCL and a CUDA LibTorch");
#else
  const c10::Device cuda(c10::kCUDA, 0);
  auto nccl = worker::MakeNcclCommunicator(
      nullptr, worker::GroupSpec{0, 1, "gpu_test/grad_sync/", kTimeout}, 0);
  ReadingCommunicator comm(*nccl, std::this_thread::get_id());
  torch::manual_seed(0);
  torch::nn::Sequential model;
  for (int i = 0; i < 6; ++i) model->push_back(torch::nn::Linear(512, 512));
  model->to(cuda);
  worker::GradSyncOptions options;
  options.first_bucket_bytes = 1 << 20;  // about one 512x512 fp32 weight per bucket
  options.bucket_bytes = 1 << 20;
  options.timeout = kTimeout;
  worker::GradSync sync(model->parameters(), comm, options);
  ASSERT_GE(sync.buckets().size(), 4u);
  const at::Tensor x1 = at::randn({256, 512}, cuda), x2 = at::randn({256, 512}, cuda);
  auto backward = [&](const at::Tensor& x, bool synced) {
    at::Tensor loss = model->forward(x).square().mean();
    if (synced) at::cuda::sleep(400 * 1000 * 1000);  // ~0.2 s of device time on the user stream
    sync.BeginBackward(synced, loss);                // the graph walk starts at the loss
    loss.backward();
    sync.EndBackward();
  };
  // The reference: x2's gradients without the pipeline, on the default stream.
  backward(x2, false);
  const std::vector<at::Tensor> expected = Grads(model);
  ClearGrads(model);
  backward(x1, false);  // not synced: nothing reaches the buckets
  ClearGrads(model);
  torch::cuda::synchronize();  // the default stream's work is done before the user stream reads it
  c10::cuda::CUDAStream user = c10::cuda::getStreamFromPool(false, 0);
  {
    c10::cuda::CUDAStreamGuard guard(user);
    backward(x1, true);  // the buckets now hold x1's gradients: stale for the next step
    ClearGrads(model);
    backward(x2, true);
    user.synchronize();
  }
  EXPECT_GT(comm.from_comm_thread(), 0) << "no bucket went through the communication thread";
  const std::vector<at::Tensor> got = Grads(model);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(at::allclose(got[i], expected[i], 1e-5, 1e-6))
        << "parameter " << i << ": the bucket was read before the user stream filled it (max "
        << (got[i] - expected[i]).abs().max().item<float>() << " off)";
  }
#endif
}

}  // namespace
}  // namespace accel
