#include "tests/testing/contract/reference.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace accel::contract {

std::unique_ptr<torch::optim::SGD> MakeOptimizer(const Sequence& seq, FuzzNet& net, int which) {
  auto options =
      which == 0 ? torch::optim::SGDOptions(0.05).momentum(0.9) : torch::optim::SGDOptions(0.1);
  return std::make_unique<torch::optim::SGD>(OptimizerParams(seq, net, which), options);
}

Reference::Reference(const Sequence& seq, int world, FuzzNet net, int per_machine)
    : seq_(seq),
      world_(world),
      per_machine_(per_machine > 0 && per_machine < world ? per_machine : world),
      net_(std::move(net)) {
  std::unordered_set<const c10::TensorImpl*> seen;
  for (const auto& p : net_->parameters()) {
    if (p.requires_grad() && seen.insert(p.unsafeGetTensorImpl()).second) trainable_.push_back(p);
  }
  for (int i = 0; i < seq.optimizers; ++i) opts_.push_back(MakeOptimizer(seq, net_, i));
  opt_found_.resize(opts_.size());
  local_.assign(static_cast<std::size_t>(world), std::vector<at::Tensor>(trainable_.size()));
  used_.assign(trainable_.size(), false);
  if (seq.scaling) scale_ = seq.init_scale;
}

bool Reference::Accumulate() {
  ++micro_step_;
  return micro_step_ % seq_.accumulation == 0;
}

void Reference::FinishIteration() {
  if (!pending_) return;  // GradScaler.update() follows the optimizers' steps
  if (seq_.scaling) {
    // GradScaler.update (_amp_update_scale_): backoff on overflow, growth after 2 clean steps.
    if (iteration_found_) {
      scale_ = static_cast<float>(scale_ * 0.5);
      tracker_ = 0;
    } else if (++tracker_ == 2) {
      scale_ = static_cast<float>(scale_ * 2.0);
      tracker_ = 0;
    }
  }
  pending_ = false;
  iteration_found_ = false;
  ForgetUnscales();
}

double Reference::scale() {
  FinishIteration();
  return seq_.scaling ? scale_ : 1.0;
}

void Reference::ZeroByHand() {
  std::unordered_set<const c10::TensorImpl*> zeroed;
  for (auto& opt : opts_) {
    opt->zero_grad();
    for (auto& group : opt->param_groups()) {
      for (auto& p : group.params()) zeroed.insert(p.unsafeGetTensorImpl());
    }
  }
  // What this window accumulated for those parameters (and what they carried into it) is gone
  // on every rank; a defined gradient stays defined (zeros).
  for (std::size_t i = 0; i < trainable_.size(); ++i) {
    if (zeroed.count(trainable_[i].unsafeGetTensorImpl()) == 0) continue;
    for (auto& rank : local_) {
      if (rank[i].defined()) rank[i] = at::zeros_like(rank[i]);
    }
  }
}

void Reference::Backward(bool sync, int micro, int k, int inf_rank) {
  FinishIteration();
  ForgetUnscales();  // an unscale_ without a step is forgotten by the next backward
  at::NoGradGuard no_grad;
  if (!window_open_) {
    // What each gradient holds when the window starts is averaged with the window's sums: each
    // rank starts its sum from 1/world of it (DDP divides the whole .grad by the world size).
    for (std::size_t i = 0; i < trainable_.size(); ++i) {
      const at::Tensor& prev = trainable_[i].grad();
      if (!prev.defined()) continue;
      used_[i] = true;
      for (auto& rank : local_) rank[i] = prev * (1.0 / static_cast<double>(world_));
    }
    window_open_ = true;
  }
  for (int r = 0; r < world_; ++r) {
    at::AutoGradMode enable(true);
    at::Tensor loss = Loss(seq_, net_, r, micro, k);
    if (r == inf_rank) loss = loss * std::numeric_limits<double>::infinity();
    // The 1/(N x world) of the average rides on the loss (any order is PyTorch's answer up to
    // rounding; this one keeps the rounding noise far below the 1e-6 the test allows).
    loss = loss / static_cast<double>(seq_.accumulation * world_);
    if (seq_.scaling) loss = loss * at::full({1}, scale_, at::kFloat);
    auto grads = torch::autograd::grad({loss.sum()}, trainable_, {}, false, false,
                                       /*allow_unused=*/true);
    for (std::size_t i = 0; i < trainable_.size(); ++i) {
      if (!grads[i].defined()) continue;
      used_[i] = true;
      at::Tensor& acc = local_[r][i];
      acc = acc.defined() ? acc + grads[i] : grads[i].clone();
    }
  }
  if (!sync) {
    unsynced_ = true;
    return;
  }
  for (std::size_t i = 0; i < trainable_.size(); ++i) {
    if (used_[i]) {
      at::Tensor sum;
      for (int m = 0; m < world_; m += per_machine_) {  // machines in order
        at::Tensor part;
        for (int r = m; r < m + per_machine_ && r < world_; ++r) {  // rank order within
          if (local_[r][i].defined()) part = part.defined() ? part + local_[r][i] : local_[r][i];
        }
        if (part.defined()) sum = sum.defined() ? sum + part : part;
      }
      trainable_[i].mutable_grad() = sum.defined() ? sum : at::zeros_like(trainable_[i]);
    }
    used_[i] = false;
    for (auto& rank : local_) rank[i] = at::Tensor();
  }
  window_open_ = false;
  unsynced_ = false;
}

void Reference::ForgetUnscales() {
  unscaled_.clear();
  opt_found_.assign(opts_.size(), std::nullopt);
}

bool Reference::Unscale(const std::vector<at::Tensor>& params) {
  const float inv = static_cast<float>(1.0 / static_cast<double>(static_cast<float>(scale_)));
  at::NoGradGuard no_grad;
  bool found = false;
  for (const auto& p : params) {
    if (!p.grad().defined() || !unscaled_.insert(p.unsafeGetTensorImpl()).second) continue;
    if (!at::isfinite(p.grad()).all().item<bool>()) found = true;
    p.grad().mul_(inv);
  }
  return found;
}

bool Reference::UnscaleOptimizer(int which) {
  auto& found = opt_found_[static_cast<std::size_t>(which)];
  if (!found) found = Unscale(opts_[static_cast<std::size_t>(which)]->param_groups()[0].params());
  return *found;
}

double Reference::Clip(bool sync_for_step, double max_norm) {
  if (!sync_for_step || unsynced_) return 0.0;
  if (seq_.scaling) {
    for (int i = 0; i < static_cast<int>(opts_.size()); ++i) UnscaleOptimizer(i);
    Unscale(trainable_);  // libaccel: the norm is of true gradients (accelerate leaves these)
  }
  std::vector<at::Tensor> all;
  std::unordered_set<const c10::TensorImpl*> seen;
  for (const auto& p : net_->parameters()) {
    if (seen.insert(p.unsafeGetTensorImpl()).second) all.push_back(p);
  }
  return torch::nn::utils::clip_grad_norm_(all, max_norm);
}

bool Reference::Step(bool sync_for_step, int which) {
  if (!sync_for_step || unsynced_) return false;
  auto& opt = *opts_[static_cast<std::size_t>(which)];
  bool stepped = true;
  if (seq_.scaling) {
    // GradScaler.step: found_inf as recorded when this optimizer's gradients were unscaled
    // (by clip_grad_norm before, or now), not what clipping left in them.
    const bool found = UnscaleOptimizer(which);
    if (found) {
      stepped = false;
    } else {
      opt.step();
    }
    iteration_found_ = iteration_found_ || found;
    pending_ = true;
  } else {
    opt.step();
  }
  opt.zero_grad();
  return stepped;
}

void Reference::Save() {
  FinishIteration();
  saved_.params.clear();
  for (const auto& p : net_->parameters()) saved_.params.push_back(p.detach().clone());
  saved_.opts.clear();
  for (auto& opt : opts_) {
    torch::serialize::OutputArchive archive;
    opt->save(archive);
    std::ostringstream out;
    archive.save_to(out);
    saved_.opts.push_back(out.str());
  }
  saved_.scale = scale_;
  saved_.tracker = tracker_;
  saved_.micro_step = micro_step_;
}

void Reference::Load() {
  at::NoGradGuard no_grad;
  auto params = net_->parameters();
  for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_(saved_.params[i]);
  for (std::size_t i = 0; i < opts_.size(); ++i) {
    torch::serialize::InputArchive archive;
    std::istringstream in(saved_.opts[i]);
    archive.load_from(in);
    opts_[i]->state().clear();  // a restarted process has the checkpoint's state only
    opts_[i]->load(archive);
  }
  scale_ = saved_.scale;
  tracker_ = saved_.tracker;
  micro_step_ = saved_.micro_step;
  pending_ = false;
  iteration_found_ = false;
  ForgetUnscales();
  for (auto& p : trainable_) p.mutable_grad().reset();
  for (auto& rank : local_) {
    for (auto& g : rank) g = at::Tensor();
  }
  used_.assign(trainable_.size(), false);
  window_open_ = false;
  unsynced_ = false;
}

}  // namespace accel::contract
