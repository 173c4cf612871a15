// ShmCommunicator: collectives through shared memory among the ranks of each machine and, with
// several machines, hierarchically: the machine's ranks reduce through shared memory, one leader
// per machine (its lowest rank) all-reduces the machine's result with the other leaders (Gloo or
// NCCL), and the leader broadcasts it back through shared memory.
//
// CPU tensors are reduced in place; CUDA tensors are staged through host memory (the leaders'
// NCCL runs on the device). fp16/bf16 are reduced in float32 end to end: natively by the shared
// memory kernel on one machine, through a float32 copy across machines. AllGather is an
// all-reduce (sum) of a zero-filled [world, bytes] buffer where each rank filled its row: exact
// for every dtype, and rare enough not to need its own algorithm.
//
// Any failure aborts the whole group (shared memory: every local rank fails at once, naming the
// culprit; leaders: the inter communicator is aborted), as the Communicator contract requires.
#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "accel/error.h"
#include "common/defaults.h"
#include "worker/src/comm/factory.h"
#include "worker/src/comm/shm/group.h"
#include "worker/src/comm/shm/reduce.h"
#include "worker/src/comm/shm/topology.h"

namespace accel::worker {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

milliseconds Left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? left : milliseconds(1);
}

class ShmCommunicator : public Communicator {
 public:
  ShmCommunicator(int rank, int size, shm::Topology topology, std::unique_ptr<shm::ShmGroup> local,
                  std::unique_ptr<Communicator> inter, std::string inter_name,
                  c10::Device inter_device)
      : rank_(rank),
        size_(size),
        topology_(std::move(topology)),
        local_(std::move(local)),
        inter_(std::move(inter)),
        name_(inter_name.empty() ? "shm" : "shm+" + inter_name),
        inter_device_(inter_device),
        multi_machine_(topology_.machines.size() > 1) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return name_; }

  void AllReduce(at::Tensor& tensor, ReduceOp op, milliseconds timeout) override {
    // Argument errors are found before anything is issued: the same mistake on every rank
    // leaves the group usable (a mismatch between ranks fails in the barrier's signature check).
    CheckContiguous("all-reduce", tensor);
    const auto dtype = tensor.scalar_type();
    if (!shm::Supported(dtype)) {
      throw Error("all-reduce", Subject(),
                  std::string("unsupported dtype ") + c10::toString(dtype) +
                      " (float, double, half, bfloat16, int32, int64, uint8 or int8)");
    }
    Run("all-reduce", [&] {
      const auto deadline = Clock::now() + timeout;
      const bool half = dtype == at::kHalf || dtype == at::kBFloat16;
      if (tensor.is_cpu() && !(half && multi_machine_)) {
        ReduceHost(tensor, op, deadline);
        return;
      }
      // Staged: a host copy (float32 for half types across machines), reduced, copied back.
      at::Tensor host =
          tensor.to(at::kCPU, half && multi_machine_ ? at::kFloat : dtype).contiguous();
      ReduceHost(host, op, deadline);
      tensor.copy_(host);
    });
  }

  void Broadcast(at::Tensor& tensor, int root, milliseconds timeout) override {
    CheckContiguous("broadcast", tensor);
    if (root < 0 || root >= size_) {
      throw Error("broadcast", Subject(), "root " + std::to_string(root) + " out of range");
    }
    Run("broadcast", [&] {
      const auto deadline = Clock::now() + timeout;
      at::Tensor host = tensor.is_cpu() ? tensor : tensor.to(at::kCPU);
      BroadcastHost(host, root, deadline);
      if (!tensor.is_cpu()) tensor.copy_(host);
    });
  }

  at::Tensor AllGather(const at::Tensor& input, milliseconds timeout) override {
    at::Tensor in = input.contiguous();
    std::vector<int64_t> shape{size_};
    shape.insert(shape.end(), in.sizes().begin(), in.sizes().end());
    const auto bytes = static_cast<int64_t>(in.nbytes());
    at::Tensor rows = at::zeros({size_, bytes}, at::TensorOptions().dtype(at::kByte));
    Run("all-gather", [&] {
      at::Tensor mine = in.cpu().contiguous();
      if (bytes > 0) {
        rows[rank_].copy_(at::from_blob(mine.data_ptr(), {bytes}, at::kByte));
        ReduceHost(rows, ReduceOp::kSum, Clock::now() + timeout);
      }
    });
    at::Tensor out = at::empty(shape, in.options().device(at::kCPU));
    if (bytes > 0) std::memcpy(out.data_ptr(), rows.data_ptr(), rows.nbytes());
    return out.to(in.device());
  }

  void Barrier(milliseconds timeout) override {
    Run("barrier", [&] {
      const auto deadline = Clock::now() + timeout;
      if (local_) local_->Barrier(deadline);
      if (!multi_machine_) return;
      if (inter_) inter_->Barrier(Left(deadline));
      if (local_) local_->Barrier(deadline);
    });
  }

  void Abort() override {
    if (aborted_.exchange(true)) return;
    if (local_) local_->Fail("global rank " + std::to_string(rank_) + " aborted its communicator");
    if (inter_) inter_->Abort();
  }

 private:
  std::string Subject() const {
    return "(" + name_ + " rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ")";
  }

  void CheckContiguous(const char* op, const at::Tensor& t) const {
    if (!t.is_contiguous()) throw Error(op, Subject(), "tensor is not contiguous");
    if (!t.is_cpu() && !t.is_cuda()) throw Error(op, Subject(), "tensor is not on CPU or CUDA");
  }

  // `host`: a contiguous CPU tensor.
  void ReduceHost(at::Tensor& host, ReduceOp op, Clock::time_point deadline) {
    const int64_t n = host.numel();
    if (n == 0) return;
    const ReduceOp local_op = op == ReduceOp::kAvg && multi_machine_ ? ReduceOp::kSum : op;
    if (local_) {
      local_->AllReduce(host.data_ptr(), host.scalar_type(), n, local_op, size_, deadline);
    }
    if (!multi_machine_) return;
    if (inter_) {
      at::Tensor across = inter_device_.is_cpu() ? host : host.to(inter_device_);
      inter_->AllReduce(across, op == ReduceOp::kAvg ? ReduceOp::kSum : op, Left(deadline));
      if (op == ReduceOp::kAvg) {
        if (at::isFloatingType(across.scalar_type())) {
          across.div_(size_);
        } else {
          across.div_(size_, "trunc");
        }
      }
      if (!inter_device_.is_cpu()) host.copy_(across);
    }
    if (local_) local_->Broadcast(host.data_ptr(), host.nbytes(), 0, deadline);
  }

  void BroadcastHost(at::Tensor& host, int root, Clock::time_point deadline) {
    const int root_machine = topology_.machine_of[root];
    const auto& members = topology_.machines[root_machine];
    const int root_local =
        static_cast<int>(std::find(members.begin(), members.end(), root) - members.begin());
    const bool mine = topology_.machine == root_machine;
    if (local_ && mine) local_->Broadcast(host.data_ptr(), host.nbytes(), root_local, deadline);
    if (!multi_machine_) return;
    if (inter_) {
      at::Tensor across = inter_device_.is_cpu() ? host : host.to(inter_device_);
      inter_->Broadcast(across, root_machine, Left(deadline));
      if (!inter_device_.is_cpu()) host.copy_(across);
    }
    if (local_ && !mine) local_->Broadcast(host.data_ptr(), host.nbytes(), 0, deadline);
  }

  // Serializes calls, adds context and aborts the group on any failure.
  template <typename Fn>
  void Run(const char* op, Fn&& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) throw Error(op, Subject(), "communicator was aborted");
    try {
      fn();
    } catch (const std::exception& e) {
      Abort();
      const std::string what = e.what();
      if (what.rfind(op, 0) == 0) throw Error(what);  // already "<op> <subject>: <cause>"
      throw Error(op, Subject(), what);
    }
  }

  const int rank_;
  const int size_;
  const shm::Topology topology_;
  std::unique_ptr<shm::ShmGroup> local_;  // null when this machine runs one rank
  std::unique_ptr<Communicator> inter_;   // leaders of a multi-machine job only
  const std::string name_;
  const c10::Device inter_device_;
  const bool multi_machine_;
  std::mutex mu_;  // one collective at a time
  std::atomic<bool> aborted_{false};
};

}  // namespace

std::unique_ptr<Communicator> MakeShmCommunicator(Kv& kv, const GroupSpec& spec, Backend inter,
                                                  const c10::Device& device) {
  const auto deadline = Clock::now() + spec.timeout;
  const std::string prefix = spec.key_prefix + "shm/";
  shm::Topology topology =
      shm::DiscoverTopology(kv, prefix, spec.rank, spec.size, shm::HostKey(), spec.timeout);
  if (!topology.AnyShared()) {  // one rank per machine: nothing to share, the flat backend
    GroupSpec flat = spec;
    flat.shared_memory = SharedMemory::kOff;
    flat.timeout = Left(deadline);
    return MakeCommunicator(inter, device, flat, &kv);
  }
  std::unique_ptr<shm::ShmGroup> local;
  if (topology.local_size() > 1) {
    local =
        shm::ShmGroup::Connect(kv, prefix + "segment/" + std::to_string(topology.machine),
                               topology.local_rank, topology.local_size(), spec.rank,
                               static_cast<std::size_t>(defaults::kShmSlotBytes), Left(deadline));
  }
  std::unique_ptr<Communicator> across;
  std::string inter_name;
  c10::Device inter_device(c10::kCPU);
  if (topology.machines.size() > 1) {
    inter_name = inter == Backend::kNccl ? "nccl" : "gloo";
    if (topology.is_leader()) {
      GroupSpec leaders{topology.machine,
                        static_cast<int>(topology.machines.size()),
                        spec.key_prefix + "leaders/",
                        Left(deadline),
                        SharedMemory::kOff,
                        spec.abortable};
      if (inter == Backend::kNccl) inter_device = device;
      try {
        across = MakeCommunicator(inter, inter_device, leaders, &kv);
      } catch (const std::exception& e) {
        // The machine's other ranks wait for this leader in the barrier below: tell them now
        // rather than at the deadline.
        if (local)
          local->Fail("global rank " + std::to_string(spec.rank) +
                      " (this machine's leader) could not connect to the other "
                      "machines: " +
                      e.what());
        throw;
      }
    }
    // Every local rank leaves together, once its leader is connected.
    if (local) local->Barrier(deadline);
  }
  return std::make_unique<ShmCommunicator>(spec.rank, spec.size, std::move(topology),
                                           std::move(local), std::move(across), inter_name,
                                           inter_device);
}

}  // namespace accel::worker
