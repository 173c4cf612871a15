// StepGraph: one CUDA graph of a training step. Work runs on a side stream (CUDA graphs capture
// only off the legacy default stream), ordered after everything the current stream had issued
// and before everything it issues later, so the caller's stream sees the step as its own.
// A build whose LibTorch has no CUDA has no graphs: Available() is false and the other calls
// throw. Internal; one per input shape of an accel::CompiledStep.
#ifndef ACCEL_WORKER_GRAPH_STEP_GRAPH_H_
#define ACCEL_WORKER_GRAPH_STEP_GRAPH_H_

#include <functional>
#include <memory>

namespace accel::worker {

class StepGraph {
 public:
  // True when this build can capture CUDA graphs (LibTorch with CUDA).
  static bool Available();

  StepGraph();
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // Runs `body` eagerly on the side stream (a warm-up step that really trains: lazy
  // initializations such as cuBLAS's workspace happen here, not during the capture).
  void Run(const std::function<void()>& body);
  // Captures what `body` issues on the side stream into the graph; nothing executes.
  void Capture(const std::function<void()>& body);
  // Launches the captured graph on the current stream.
  void Replay();
  bool captured() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace accel::worker

#endif  // ACCEL_WORKER_GRAPH_STEP_GRAPH_H_
