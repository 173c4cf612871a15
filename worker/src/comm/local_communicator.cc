// The world-of-1 communicator: no peers, so every collective is the identity.
#include <ATen/ATen.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "accel/error.h"
#include "worker/src/comm/factory.h"

namespace accel::worker {
namespace {

class LocalCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "local"; }

  void AllReduce(at::Tensor& /*tensor*/, ReduceOp /*op*/, std::chrono::milliseconds) override {
    CheckOpen("all-reduce");
  }
  void Broadcast(at::Tensor& /*tensor*/, int root, std::chrono::milliseconds) override {
    CheckOpen("broadcast");
    if (root != 0) throw Error("broadcast", "root " + std::to_string(root), "world size is 1");
  }
  at::Tensor AllGather(const at::Tensor& input, std::chrono::milliseconds) override {
    CheckOpen("all-gather");
    return input.unsqueeze(0).clone();
  }
  void Barrier(std::chrono::milliseconds) override { CheckOpen("barrier"); }
  void Abort() override { aborted_ = true; }

 private:
  void CheckOpen(const char* op) const {
    if (aborted_) throw Error(op, "(local)", "communicator was aborted");
  }
  std::atomic<bool> aborted_{false};
};

}  // namespace

std::unique_ptr<Communicator> MakeLocalCommunicator() {
  return std::make_unique<LocalCommunicator>();
}

}  // namespace accel::worker

namespace accel {

const char* ToString(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "?";
}

}  // namespace accel
