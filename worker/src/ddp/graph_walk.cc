#include "worker/src/ddp/graph_walk.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include <unordered_set>
#include <vector>

namespace accel::worker {

std::unordered_set<const torch::autograd::Node*> ReachableNodes(const at::Tensor& root) {
  std::unordered_set<const torch::autograd::Node*> seen;
  if (!root.defined()) return seen;
  const auto& fn = torch::autograd::impl::gradient_edge(root).function;
  if (!fn) return seen;
  std::vector<const torch::autograd::Node*> stack{fn.get()};
  seen.insert(fn.get());
  while (!stack.empty()) {
    const torch::autograd::Node* node = stack.back();
    stack.pop_back();
    for (const torch::autograd::Edge& edge : node->next_edges()) {
      const torch::autograd::Node* next = edge.function.get();
      if (next != nullptr && seen.insert(next).second) stack.push_back(next);
    }
  }
  return seen;
}

}  // namespace accel::worker
