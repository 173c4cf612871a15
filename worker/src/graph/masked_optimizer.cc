#include "worker/src/graph/masked_optimizer.h"

#include <ATen/ATen.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace accel::worker {
namespace {

// The key of a parameter's entry in Optimizer::state(): the TensorImpl's address, as text in
// LibTorch 1.13 (c10::guts::to_string), as a void* in later versions.
template <typename Map>
typename Map::key_type StateKey(const Map&, const at::Tensor& p) {
  using Key = typename Map::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;
    text << p.unsafeGetTensorImpl();
    return text.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

// A parameter group's hyperparameter on the device, rewritten only when the host's changes.
class DeviceScalar {
 public:
  DeviceScalar(double value, const at::TensorOptions& options)
      : host_(value), device_(at::full({1}, value, options.dtype(at::kFloat))) {}
  void Refresh(double value) {
    if (value == host_) return;
    host_ = value;
    device_.fill_(value);
  }
  const at::Tensor& tensor() const { return device_; }

 private:
  double host_;
  at::Tensor device_;
};

struct Param {
  at::Tensor p;
  std::size_t group;
};

// The parameters it steps, in the optimizer's order, each with its group's index: those that
// require a gradient and, when `with_state`, have optimizer state (LibTorch creates it at a
// parameter's first step; after zero_grad LibTorch 2.x leaves gradients undefined, so a defined
// gradient cannot say which parameters train).
template <typename Map>
std::vector<Param> SteppedParams(torch::optim::Optimizer& optimizer, const Map& state,
                                 bool with_state) {
  std::vector<Param> out;
  auto& groups = optimizer.param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (const auto& p : groups[g].params()) {
      if (!p.requires_grad()) continue;
      if (with_state && state.count(StateKey(state, p)) == 0) continue;
      out.push_back({p, g});
    }
  }
  return out;
}

class MaskedSgd final : public MaskedOptimizer {
 public:
  MaskedSgd(torch::optim::SGD& sgd, std::vector<Param> params) : sgd_(sgd), stepped_(params) {
    const auto options = params.front().p.options();
    for (auto& group : sgd.param_groups()) {
      const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
      lr_.emplace_back(o.lr(), options);
    }
    for (auto& param : stepped_) params_.push_back(param.p);
  }

  void RefreshHyperparameters() override {
    auto& groups = sgd_.param_groups();
    for (std::size_t g = 0; g < groups.size(); ++g) {
      lr_[g].Refresh(static_cast<const torch::optim::SGDOptions&>(groups[g].options()).lr());
    }
  }

  // sgd.cpp: d_p = grad (+ wd p); buf = momentum buf + (1 - dampening) d_p; d_p = nesterov ?
  // d_p + momentum buf : buf; p -= lr d_p.
  void Step(const at::Tensor& found_inf) override {
    at::NoGradGuard no_grad;
    const at::Tensor skip = found_inf.gt(0);
    auto& groups = sgd_.param_groups();
    for (const Param& param : stepped_) {
      const auto& o = static_cast<const torch::optim::SGDOptions&>(groups[param.group].options());
      const at::Tensor& p = param.p;
      at::Tensor d_p = p.grad();
      if (o.weight_decay() != 0) d_p = d_p.add(p, o.weight_decay());
      if (o.momentum() != 0) {
        auto& state =
            static_cast<torch::optim::SGDParamState&>(*sgd_.state().at(StateKey(sgd_.state(), p)));
        at::Tensor& buf = state.momentum_buffer();
        at::Tensor next = buf.mul(o.momentum()).add_(d_p, 1 - o.dampening());
        buf.copy_(at::where(skip, buf, next));
        d_p = o.nesterov() ? d_p.add(next, o.momentum()) : next;
      }
      at::Tensor updated = p.sub(d_p * lr_[param.group].tensor());
      p.copy_(at::where(skip, p, updated));
    }
  }

  void SyncToOptimizer() override {}  // SGD keeps no count
  const std::vector<at::Tensor>& params() const override { return params_; }

 private:
  torch::optim::SGD& sgd_;
  std::vector<Param> stepped_;
  std::vector<at::Tensor> params_;
  std::vector<DeviceScalar> lr_;
};

class MaskedAdamW final : public MaskedOptimizer {
 public:
  MaskedAdamW(torch::optim::AdamW& adamw, std::vector<Param> params)
      : adamw_(adamw), stepped_(params) {
    const auto options = params.front().p.options().dtype(at::kFloat);
    for (auto& group : adamw.param_groups()) {
      const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
      lr_.emplace_back(o.lr(), options);
    }
    for (auto& param : stepped_) {
      params_.push_back(param.p);
      base_.push_back(State(param.p).step());
    }
    applied_ = at::zeros({1}, options);
  }

  void RefreshHyperparameters() override {
    auto& groups = adamw_.param_groups();
    for (std::size_t g = 0; g < groups.size(); ++g) {
      lr_[g].Refresh(static_cast<const torch::optim::AdamWOptions&>(groups[g].options()).lr());
    }
  }

  // adamw.cpp: p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g g;
  // p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
  void Step(const at::Tensor& found_inf) override {
    at::NoGradGuard no_grad;
    const at::Tensor skip = found_inf.gt(0);
    auto& groups = adamw_.param_groups();
    for (std::size_t i = 0; i < stepped_.size(); ++i) {
      const Param& param = stepped_[i];
      const auto& o = static_cast<const torch::optim::AdamWOptions&>(groups[param.group].options());
      const double beta1 = std::get<0>(o.betas());
      const double beta2 = std::get<1>(o.betas());
      const at::Tensor& p = param.p;
      const at::Tensor& grad = p.grad();
      const at::Tensor& lr = lr_[param.group].tensor();
      auto& state = State(p);
      const at::Tensor t = applied_ + static_cast<double>(base_[i] + 1);
      const at::Tensor bias1 = 1 - at::pow(beta1, t);
      const at::Tensor bias2_sqrt = (1 - at::pow(beta2, t)).sqrt();
      at::Tensor updated = o.weight_decay() != 0 ? p * (1 - lr * o.weight_decay()) : p.clone();
      at::Tensor m = state.exp_avg().mul(beta1).add_(grad, 1 - beta1);
      at::Tensor v = state.exp_avg_sq().mul(beta2).addcmul_(grad, grad, 1 - beta2);
      at::Tensor denom = (v.sqrt() / bias2_sqrt).add_(o.eps());
      updated.sub_(m / denom * (lr / bias1));
      state.exp_avg().copy_(at::where(skip, state.exp_avg(), m));
      state.exp_avg_sq().copy_(at::where(skip, state.exp_avg_sq(), v));
      p.copy_(at::where(skip, p, updated));
    }
    applied_.add_(1 - found_inf.gt(0).to(at::kFloat));
  }

  void SyncToOptimizer() override {
    const auto applied = static_cast<std::int64_t>(applied_.item<float>());
    for (std::size_t i = 0; i < stepped_.size(); ++i) {
      State(stepped_[i].p).step(base_[i] + applied);
    }
  }
  const std::vector<at::Tensor>& params() const override { return params_; }

 private:
  torch::optim::AdamWParamState& State(const at::Tensor& p) {
    auto& state = adamw_.state();
    return static_cast<torch::optim::AdamWParamState&>(*state.at(StateKey(state, p)));
  }

  torch::optim::AdamW& adamw_;
  std::vector<Param> stepped_;
  std::vector<at::Tensor> params_;
  // Each parameter's step count when made, and the steps applied since (float32 [1], exact to
  // 2^24). Neither changes but through Step: a captured graph holds base_ as constants.
  std::vector<std::int64_t> base_;
  at::Tensor applied_;
  std::vector<DeviceScalar> lr_;
};

}  // namespace

std::unique_ptr<MaskedOptimizer> MaskedOptimizer::Make(torch::optim::Optimizer& optimizer,
                                                       std::string* why) {
  if (auto* sgd = dynamic_cast<torch::optim::SGD*>(&optimizer)) {
    bool momentum = false;
    for (auto& group : sgd->param_groups()) {
      momentum |= static_cast<const torch::optim::SGDOptions&>(group.options()).momentum() != 0;
    }
    std::vector<Param> params = SteppedParams(optimizer, optimizer.state(), momentum);
    if (params.empty()) {
      *why = momentum ? "SGD's momentum buffers do not exist yet (no step taken)"
                      : "no parameter of the optimizer requires a gradient";
      return nullptr;
    }
    return std::make_unique<MaskedSgd>(*sgd, std::move(params));
  }
  if (auto* adamw = dynamic_cast<torch::optim::AdamW*>(&optimizer)) {
    for (auto& group : adamw->param_groups()) {
      if (static_cast<const torch::optim::AdamWOptions&>(group.options()).amsgrad()) {
        *why = "AdamW with amsgrad is not supported";
        return nullptr;
      }
    }
    std::vector<Param> params = SteppedParams(optimizer, optimizer.state(), true);
    if (params.empty()) {
      *why = "AdamW's state does not exist yet (no step taken)";
      return nullptr;
    }
    return std::make_unique<MaskedAdamW>(*adamw, std::move(params));
  }
  *why = "only torch::optim::SGD and AdamW are supported";
  return nullptr;
}

}  // namespace accel::worker
