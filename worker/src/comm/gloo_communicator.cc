// GlooCommunicator: CPU collectives over Gloo's TCP transport, connected through our Kv.
//
// This file is the one adapter for Gloo: gloo::Exception/IoException/EnforceNotMet are caught here
// and rethrown as accel::Error. Gloo's algorithms with unbound buffers (gloo::allreduce,
// broadcast, allgather, barrier) wait on condition variables with the per-call timeout; the TCP
// pairs stay in their default asynchronous (epoll loop thread) mode, so waiting never busy-polls,
// which matters when there are more ranks than cores.
#include <ATen/ATen.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "accel/error.h"
#include "common/env_reader.h"
#include "worker/src/comm/factory.h"

namespace accel::worker {
namespace {

// gloo::rendezvous::Store over our Kv: what Context::connectFullMesh uses to swap addresses.
class GlooStore : public gloo::rendezvous::Store {
 public:
  GlooStore(Kv& kv, std::string prefix, std::chrono::milliseconds timeout)
      : kv_(kv), prefix_(std::move(prefix)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    kv_.Set(prefix_ + key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    std::string value = kv_.Get(prefix_ + key, timeout_);
    return std::vector<char>(value.begin(), value.end());
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    for (const auto& key : keys) kv_.Get(prefix_ + key, timeout);
  }

 private:
  Kv& kv_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

template <typename T>
ReduceFn PickReduce(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return &gloo::sum<T>;
    case ReduceOp::kMax:
      return &gloo::max<T>;
    case ReduceOp::kMin:
      return &gloo::min<T>;
  }
  return &gloo::sum<T>;
}

// Reduces `tensor` in place with Gloo (one tag): static, so that an abandoned call (below) needs
// nothing of the communicator but the context it holds.
template <typename T>
void ReduceTyped(const std::shared_ptr<gloo::rendezvous::Context>& context, at::Tensor tensor,
                 ReduceOp op, uint32_t tag, std::chrono::milliseconds timeout) {
  if (tensor.numel() == 0) return;
  gloo::AllreduceOptions opts(context);
  opts.setOutput(tensor.data_ptr<T>(), static_cast<size_t>(tensor.numel()));
  opts.setReduceFunction(PickReduce<T>(op));
  opts.setTag(tag);
  opts.setTimeout(timeout);
  gloo::allreduce(opts);
}

// One collective handed to its own thread (abortable groups): the caller waits for it or for
// Abort(), whichever comes first.
struct PendingOp {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
};

class GlooCommunicator : public Communicator {
 public:
  GlooCommunicator(std::shared_ptr<gloo::rendezvous::Context> context, int rank, int size,
                   bool abortable)
      : context_(std::move(context)), rank_(rank), size_(size), abortable_(abortable) {}

  ~GlooCommunicator() override = default;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "gloo"; }

  void AllReduce(at::Tensor& tensor, ReduceOp op, std::chrono::milliseconds timeout) override {
    CheckCpuContiguous("all-reduce", tensor);
    const auto dtype = tensor.scalar_type();
    if (dtype != at::kHalf && dtype != at::kBFloat16 && dtype != at::kFloat &&
        dtype != at::kDouble && dtype != at::kInt && dtype != at::kLong && dtype != at::kByte) {
      throw Error("all-reduce", Subject(),
                  std::string("unsupported dtype ") + c10::toString(dtype));
    }
    // Everything the collective needs is captured by value (tensors share their storage).
    Run("all-reduce",
        [context = context_, t = tensor, op, timeout, size = size_](uint32_t tag) mutable {
          const auto type = t.scalar_type();
          if (type == at::kHalf || type == at::kBFloat16) {
            // Gloo has no bf16 and a slow fp16 reduction: reduce in fp32 (the average too) and cast
            // back once.
            at::Tensor wide = t.to(at::kFloat);
            ReduceTyped<float>(context, wide, op, tag, timeout);
            if (op == ReduceOp::kAvg) wide.div_(size);
            t.copy_(wide);
            return;
          }
          switch (type) {
            case at::kFloat:
              ReduceTyped<float>(context, t, op, tag, timeout);
              break;
            case at::kDouble:
              ReduceTyped<double>(context, t, op, tag, timeout);
              break;
            case at::kInt:
              ReduceTyped<int32_t>(context, t, op, tag, timeout);
              break;
            case at::kLong:
              ReduceTyped<int64_t>(context, t, op, tag, timeout);
              break;
            default:
              ReduceTyped<uint8_t>(context, t, op, tag, timeout);
              break;
          }
          if (op == ReduceOp::kAvg) {
            if (at::isFloatingType(type)) {
              t.div_(size);
            } else {
              t.div_(size, "trunc");
            }
          }
        });
  }

  void Broadcast(at::Tensor& tensor, int root, std::chrono::milliseconds timeout) override {
    CheckCpuContiguous("broadcast", tensor);
    if (root < 0 || root >= size_) {
      throw Error("broadcast", Subject(), "root " + std::to_string(root) + " out of range");
    }
    Run("broadcast", [context = context_, t = tensor, root, timeout](uint32_t tag) {
      gloo::BroadcastOptions opts(context);
      opts.setOutput(static_cast<uint8_t*>(t.data_ptr()), t.nbytes());
      opts.setRoot(root);
      opts.setTag(tag);
      opts.setTimeout(timeout);
      gloo::broadcast(opts);
    });
  }

  at::Tensor AllGather(const at::Tensor& input, std::chrono::milliseconds timeout) override {
    at::Tensor in = input.contiguous();
    CheckCpuContiguous("all-gather", in);
    std::vector<int64_t> shape{size_};
    shape.insert(shape.end(), in.sizes().begin(), in.sizes().end());
    at::Tensor out = at::empty(shape, in.options());
    Run("all-gather", [context = context_, in, out, timeout](uint32_t tag) {
      gloo::AllgatherOptions opts(context);
      opts.setInput(static_cast<uint8_t*>(in.data_ptr()), in.nbytes());
      opts.setOutput(static_cast<uint8_t*>(out.data_ptr()), out.nbytes());
      opts.setTag(tag);
      opts.setTimeout(timeout);
      gloo::allgather(opts);
    });
    return out;
  }

  void Barrier(std::chrono::milliseconds timeout) override {
    Run("barrier", [context = context_, timeout](uint32_t tag) {
      gloo::BarrierOptions opts(context);
      opts.setTag(tag);
      opts.setTimeout(timeout);
      gloo::barrier(opts);
    });
  }

  void Abort() override {
    if (aborted_.exchange(true)) return;
    try {
      context_->closeConnections();
    } catch (const std::exception&) {
      // Already broken: nothing left to close.
    }
    // Gloo's closeConnections does not wake a call waiting for a send to complete (a peer
    // that is gone, or one that moved on): an abortable group's caller is woken here.
    std::lock_guard<std::mutex> lock(pending_mu_);
    if (pending_) {
      std::lock_guard<std::mutex> op_lock(pending_->mu);
      pending_->cv.notify_all();
    }
  }

 private:
  std::string Subject() const {
    return "(gloo rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ")";
  }

  void CheckCpuContiguous(const char* op, const at::Tensor& tensor) const {
    if (!tensor.device().is_cpu()) throw Error(op, Subject(), "tensor is not on the CPU");
    if (!tensor.is_contiguous()) throw Error(op, Subject(), "tensor is not contiguous");
  }

  uint32_t NextTag() { return tag_++ & 0x7fffffff; }

  // Runs `fn` (which owns everything it uses) on this thread, or, in an abortable group, on its
  // own thread that the caller stops waiting for at Abort(): the thread then ends at Gloo's
  // deadline, holding the context and tensors alive until then.
  template <typename Fn>
  void Execute(Fn fn) {
    if (!abortable_) {
      fn();
      return;
    }
    auto pending = std::make_shared<PendingOp>();
    {
      std::lock_guard<std::mutex> lock(pending_mu_);
      pending_ = pending;
    }
    std::thread([pending, fn = std::move(fn)]() mutable {
      std::exception_ptr error;
      try {
        fn();
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(pending->mu);
      pending->done = true;
      pending->error = error;
      pending->cv.notify_all();
    }).detach();
    std::unique_lock<std::mutex> lock(pending->mu);
    pending->cv.wait(lock, [&] { return pending->done || aborted_.load(); });
    const bool done = pending->done;
    const std::exception_ptr error = pending->error;
    lock.unlock();
    {
      std::lock_guard<std::mutex> pending_lock(pending_mu_);
      pending_.reset();
    }
    if (!done) throw gloo::IoException("the communicator was aborted while the call waited");
    if (error) std::rethrow_exception(error);
  }

  // Serializes calls (each gets the next tag), translates Gloo's exceptions and aborts the group on
  // any failure (a timed-out or broken collective leaves the peers in an unknown state).
  template <typename Fn>
  void Run(const char* op, Fn&& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) throw Error(op, Subject(), "communicator was aborted");
    try {
      Execute([fn = std::forward<Fn>(fn), tag = NextTag()]() mutable { fn(tag); });
    } catch (const accel::Error&) {
      throw;
    } catch (const gloo::IoException& e) {
      Abort();
      throw Error(op, Subject(), std::string("I/O error or timeout: ") + e.what());
    } catch (const std::exception& e) {
      Abort();
      throw Error(op, Subject(), e.what());
    }
  }

  std::shared_ptr<gloo::rendezvous::Context> context_;
  const int rank_;
  const int size_;
  const bool abortable_;
  std::mutex mu_;  // one collective at a time
  uint32_t tag_ = 1;
  std::atomic<bool> aborted_{false};
  std::mutex pending_mu_;  // guards pending_
  std::shared_ptr<PendingOp> pending_;
};

// Gloo's TCP pairs write with writev(2), which raises SIGPIPE on a connection the peer reset; the
// default action kills the worker before Gloo can report the error. A peer that dies is a fault
// the job must survive (elastic in-place recovery; issue 25's 32-machine run lost the killed
// machine's ring neighbour to signal 13 as well). Ignored here, before the first connect, unless
// the program installed a handler of its own: the write then fails with EPIPE and the collective
// with an I/O error, as under Python, whose interpreter ignores SIGPIPE.
void IgnoreSigpipeUnlessHandled() {
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) != 0 || (current.sa_flags & SA_SIGINFO) != 0 ||
      current.sa_handler != SIG_DFL) {
    return;
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGPIPE, &ignore, nullptr);
}

}  // namespace

std::unique_ptr<Communicator> MakeGlooCommunicator(Kv& kv, const GroupSpec& spec,
                                                   const std::string& hostname) {
  IgnoreSigpipeUnlessHandled();
  gloo::transport::tcp::attr attr;
  if (const char* iface = env::Get("GLOO_SOCKET_IFNAME")) {
    attr.iface = iface;
  } else {
    attr.hostname = hostname;
  }
  try {
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(spec.rank, spec.size);
    context->setTimeout(spec.timeout);
    GlooStore store(kv, spec.key_prefix + "gloo/", spec.timeout);
    context->connectFullMesh(store, device);
    return std::make_unique<GlooCommunicator>(std::move(context), spec.rank, spec.size,
                                              spec.abortable);
  } catch (const accel::Error& e) {
    throw Error("connect gloo", "rank " + std::to_string(spec.rank), e.what());
  } catch (const std::exception& e) {
    throw Error("connect gloo",
                "rank " + std::to_string(spec.rank) + " via " +
                    (attr.iface.empty() ? attr.hostname : attr.iface),
                e.what());
  }
}

}  // namespace accel::worker
