#include "tests/testing/contract/sequence.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/functional/loss.h>

#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace accel::contract {
namespace {

std::uint64_t Mix(std::uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

FuzzNetImpl::FuzzNetImpl(bool tied)
    : a(register_module("a", torch::nn::Linear(4, 6))),
      frozen(register_module("frozen", torch::nn::Linear(6, 6))),
      b(register_module("b", torch::nn::Linear(6, 3))),
      c(register_module("c", torch::nn::Linear(6, 3))),
      t(register_module("t", torch::nn::Linear(3, 3))) {
  if (tied) register_module("t_again", t);
  for (auto& p : frozen->parameters()) p.set_requires_grad(false);
}

at::Tensor FuzzNetImpl::forward(const at::Tensor& x, bool use_c) {
  at::Tensor h = at::tanh(frozen->forward(at::tanh(a->forward(x))));
  at::Tensor y = b->forward(h);
  if (use_c) y = y + c->forward(h);
  return t->forward(at::tanh(t->forward(y)));
}

std::vector<at::Tensor> OptimizerParams(const Sequence& seq, FuzzNet& net, int which) {
  std::vector<torch::nn::Linear> mods;
  if (seq.optimizers == 1) {
    if (seq.assignment == 0) {
      mods = {net->a, net->b, net->c, net->t};
    } else {
      mods = {net->b, net->t};
    }
  } else if (seq.assignment == 0) {
    mods = which == 0 ? std::vector<torch::nn::Linear>{net->a, net->b}
                      : std::vector<torch::nn::Linear>{net->c, net->t};
  } else {
    mods = which == 0 ? std::vector<torch::nn::Linear>{net->b}
                      : std::vector<torch::nn::Linear>{net->t};
  }
  std::vector<at::Tensor> out;
  for (auto& m : mods) {
    out.push_back(m->weight);
    out.push_back(m->bias);
  }
  return out;
}

Batch Data(const Sequence& seq, int rank, int micro, int k) {
  const std::uint64_t key =
      Mix(seq.seed * 1000003ULL + static_cast<std::uint64_t>(micro) * 131 +
          static_cast<std::uint64_t>(k) * 17 + static_cast<std::uint64_t>(rank));
  auto gen = at::make_generator<at::CPUGeneratorImpl>(key);
  Batch b;
  b.x = at::randn({5, 4}, gen);
  b.y = at::randn({5, 3}, gen);
  b.use_c = key % 3 == 0;  // locally, sometimes globally, unused
  return b;
}

at::Tensor Loss(const Sequence& seq, FuzzNet& net, int rank, int micro, int k) {
  const Batch b = Data(seq, rank, micro, k);
  return torch::nn::functional::mse_loss(net->forward(b.x, b.use_c), b.y);
}

Sequence Generate(std::uint64_t seed) {
  std::mt19937_64 rng(Mix(seed));
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Sequence s;
  s.seed = seed;
  s.accumulation = pick(1, 4);
  s.scaling = chance(0.5);
  s.init_scale = static_cast<double>(1 << pick(3, 12));
  s.optimizers = pick(1, 2);
  s.assignment = pick(0, 1);
  s.tied = chance(0.3);
  const bool guards = chance(0.7);
  const int micro = pick(1, 8);
  bool saved = false;
  for (int m = 0; m < micro; ++m) {
    MicroStep st;
    st.guard = guards;
    st.guard_ends_early = guards && chance(0.15);
    st.zero_by_hand = chance(0.3);
    st.backwards = chance(0.2) ? 2 : 1;
    st.throw_backward = chance(0.08);
    st.inf_rank = s.scaling && chance(0.12) ? pick(0, 3) : -1;
    st.clip = chance(0.3);
    st.step = chance(0.9);
    st.reverse_steps = chance(0.5);
    if (chance(0.1)) {
      st.state = 1;
      saved = true;
    } else if (saved && chance(0.15)) {
      st.state = 2;
    }
    s.steps.push_back(st);
  }
  return s;
}

Sequence Probe(const std::string& name) {
  Sequence s;
  s.seed = 23;
  if (name == "zerograd") {
    // for (...) { opt.zero_grad(); acc.backward(loss); acc.step(opt); }
    for (int m = 0; m < 4; ++m) {
      MicroStep st;
      st.zero_by_hand = true;
      s.steps.push_back(st);
    }
  } else if (name == "frozen") {
    s.assignment = 1;  // a and c require grad but are in no optimizer
    s.steps.resize(6);
  } else if (name == "guardstep") {
    // { auto g = acc.accumulate(model); acc.backward(loss); } acc.step(opt);  with N = 2
    s.accumulation = 2;
    MicroStep st;
    st.guard = true;
    st.guard_ends_early = true;
    s.steps.push_back(st);
  } else {
    throw std::invalid_argument("unknown probe " + name);
  }
  return s;
}

std::string Sequence::Describe() const {
  std::ostringstream out;
  out << "seed " << seed << ": N=" << accumulation << (scaling ? " scaling" : "")
      << " optimizers=" << optimizers << " assignment=" << assignment << (tied ? " tied" : "")
      << "\n";
  for (std::size_t m = 0; m < steps.size(); ++m) {
    const MicroStep& st = steps[m];
    out << "  " << m << ":" << (st.guard ? " guard" : "")
        << (st.guard_ends_early ? "(ends early)" : "") << (st.zero_by_hand ? " zero_grad" : "")
        << (st.throw_backward ? " throw" : "") << " backward x" << st.backwards;
    if (st.inf_rank >= 0) out << " inf@rank" << st.inf_rank;
    out << (st.clip ? " clip" : "") << (st.step ? (st.reverse_steps ? " step(B,A)" : " step") : "")
        << (st.state == 1   ? " save_state"
            : st.state == 2 ? " load_state"
                            : "")
        << "\n";
  }
  return out.str();
}

std::string Sequence::Kind() const {
  bool misuse = false, twice = false, throws = false, state = false, inf = false, hand = false;
  for (const MicroStep& st : steps) {
    misuse |= st.guard_ends_early;
    twice |= st.backwards > 1;
    throws |= st.throw_backward;
    state |= st.state != 0;
    inf |= st.inf_rank >= 0;
    hand |= st.zero_by_hand;
  }
  std::string k = "acc" + std::to_string(accumulation);
  if (scaling) k += "+scale";
  if (optimizers == 2) k += "+2opt";
  if (assignment == 1) k += "+noopt-params";
  if (tied) k += "+tied";
  if (misuse) k += "+guard-misuse";
  if (twice) k += "+2backward";
  if (throws) k += "+throw";
  if (state) k += "+state";
  if (inf) k += "+inf";
  if (hand) k += "+zero_grad";
  return k;
}

}  // namespace accel::contract
