// The autograd nodes a backward from `root` can reach: how GradSync tells, before backward
// starts, which parameters will get no gradient this pass (their AccumulateGrad node is not
// reachable), as torch's Reducer does for find_unused_parameters.
#ifndef ACCEL_WORKER_DDP_GRAPH_WALK_H_
#define ACCEL_WORKER_DDP_GRAPH_WALK_H_

#include <ATen/core/Tensor.h>

#include <unordered_set>

namespace torch::autograd {
struct Node;
}  // namespace torch::autograd

namespace accel::worker {

// Returns every node reachable from root.grad_fn() along next_edges (empty without one).
std::unordered_set<const torch::autograd::Node*> ReachableNodes(const at::Tensor& root);

}  // namespace accel::worker

#endif  // ACCEL_WORKER_DDP_GRAPH_WALK_H_
