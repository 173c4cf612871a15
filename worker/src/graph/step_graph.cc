#include "worker/src/graph/step_graph.h"

#include <functional>
#include <memory>
#include <stdexcept>

#if ACCEL_TORCH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace accel::worker {

#if ACCEL_TORCH_CUDA

// Stream ordering through c10's device-generic events and guards (ATen/cuda/CUDAEvent.h would
// pull in cuBLAS's headers, which the CUDA compile check does not have).
struct StepGraph::Impl {
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
  at::cuda::CUDAGraph graph;
  bool captured = false;

  // body() on the side stream, which first waits for the current stream's work; the current
  // stream then waits for the body's.
  void OnSide(const std::function<void()>& body) {
    const c10::Stream current = c10::cuda::getCurrentCUDAStream().unwrap();
    c10::Event before(c10::DeviceType::CUDA);
    before.record(current);
    before.block(side.unwrap());
    {
      c10::StreamGuard guard(side.unwrap());
      body();
    }
    c10::Event after(c10::DeviceType::CUDA);
    after.record(side.unwrap());
    after.block(current);
  }
};

bool StepGraph::Available() { return true; }
StepGraph::StepGraph() = default;  // no CUDA call until the first Run (a CPU job never makes one)
StepGraph::~StepGraph() = default;

void StepGraph::Run(const std::function<void()>& body) {
  if (!impl_) impl_ = std::make_unique<Impl>();
  impl_->OnSide(body);
}

void StepGraph::Capture(const std::function<void()>& body) {
  if (!impl_) impl_ = std::make_unique<Impl>();
  impl_->OnSide([&] {
    impl_->graph.capture_begin();
    try {
      body();
    } catch (...) {
      try {
        impl_->graph.capture_end();  // ends the stream's capture state before rethrowing
      } catch (...) {
      }
      throw;
    }
    impl_->graph.capture_end();
  });
  impl_->captured = true;
}

void StepGraph::Replay() { impl_->graph.replay(); }
bool StepGraph::captured() const { return impl_ && impl_->captured; }

#else  // LibTorch without CUDA: no graphs

struct StepGraph::Impl {};
bool StepGraph::Available() { return false; }
StepGraph::StepGraph() = default;
StepGraph::~StepGraph() = default;
void StepGraph::Run(const std::function<void()>&) {
  throw std::logic_error("StepGraph: this LibTorch has no CUDA");
}
void StepGraph::Capture(const std::function<void()>&) {
  throw std::logic_error("StepGraph: this LibTorch has no CUDA");
}
void StepGraph::Replay() { throw std::logic_error("StepGraph: this LibTorch has no CUDA"); }
bool StepGraph::captured() const { return false; }

#endif

}  // namespace accel::worker
