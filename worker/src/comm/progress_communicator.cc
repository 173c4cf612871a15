#include "worker/src/comm/progress_communicator.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>

namespace accel::worker {
namespace {

class ProgressCommunicator final : public Communicator {
 public:
  ProgressCommunicator(std::unique_ptr<Communicator> inner, std::shared_ptr<ProgressFile> progress)
      : inner_(std::move(inner)), progress_(std::move(progress)) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string name() const override { return inner_->name(); }

  void AllReduce(at::Tensor& tensor, ReduceOp op, std::chrono::milliseconds timeout) override {
    progress_->CollectiveStarted();
    inner_->AllReduce(tensor, op, timeout);
    progress_->CollectiveDone();
  }
  void Broadcast(at::Tensor& tensor, int root, std::chrono::milliseconds timeout) override {
    progress_->CollectiveStarted();
    inner_->Broadcast(tensor, root, timeout);
    progress_->CollectiveDone();
  }
  at::Tensor AllGather(const at::Tensor& input, std::chrono::milliseconds timeout) override {
    progress_->CollectiveStarted();
    at::Tensor out = inner_->AllGather(input, timeout);
    progress_->CollectiveDone();
    return out;
  }
  void Barrier(std::chrono::milliseconds timeout) override {
    progress_->CollectiveStarted();
    inner_->Barrier(timeout);
    progress_->CollectiveDone();
  }
  void Abort() override { inner_->Abort(); }

 private:
  std::unique_ptr<Communicator> inner_;
  std::shared_ptr<ProgressFile> progress_;
};

}  // namespace

std::unique_ptr<Communicator> WithProgress(std::unique_ptr<Communicator> inner,
                                           std::shared_ptr<ProgressFile> progress) {
  return std::make_unique<ProgressCommunicator>(std::move(inner), std::move(progress));
}

}  // namespace accel::worker
