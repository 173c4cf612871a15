// One rank of the differential fuzzer of the Accelerator's contract (tests/mp/worker/
// contract_test.cc and scripts/contract-fuzz spawn it with the env contract):
//
//   contract_rank fuzz OUT_DIR FIRST_SEED COUNT   sequences Generate(FIRST_SEED ...)
//   contract_rank probe OUT_DIR NAME              Probe(NAME): zerograd | frozen | guardstep
//   contract_rank export FILE FIRST_SEED COUNT WORLD   the reference's answers as JSON lines
//                                                 (no Accelerator; for ddp_check.py)
//
// Each sequence runs with a fresh Accelerator and, in this process, through the Reference (every
// rank simulated in plain LibTorch). After every micro-step every parameter, and every gradient
// whenever both sides just synchronised, must match (relative 1e-6); at the end every rank's
// parameters (and gradients, when synchronised) must be bitwise identical (all-gather). A backward
// on a detached loss must throw accel::Error naming the fix. Prints one line per sequence ("ok
// <kind>" or "MISMATCH ...") and "SUMMARY ran N ok N mismatched N kinds ..."; exit 1 on any
// mismatch.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "accel/accelerator.h"
#include "tests/testing/contract/export.h"
#include "tests/testing/contract/reference.h"
#include "tests/testing/contract/sequence.h"

namespace accel::contract {
namespace {

struct Named {
  std::string name;
  at::Tensor ours, ref;
};

// Parameters of both nets by name, each tensor once (tied parameters appear under one name).
std::vector<Named> Pair(FuzzNet& ours, FuzzNet& ref) {
  std::vector<Named> out;
  std::unordered_set<const c10::TensorImpl*> seen;
  auto theirs = ref->named_parameters();
  for (const auto& item : ours->named_parameters()) {
    if (!seen.insert(item.value().unsafeGetTensorImpl()).second) continue;
    out.push_back({item.key(), item.value(), theirs[item.key()]});
  }
  return out;
}

// "" when `got` matches `want`: both undefined, or same non-finite positions and the finite
// values within relative 1e-6 (of the norm; 1e-9 absolute for all-but-zero tensors).
std::string Compare(const at::Tensor& got, const at::Tensor& want) {
  if (got.defined() != want.defined()) {
    return std::string("defined ") + (got.defined() ? "yes" : "no") + " vs reference " +
           (want.defined() ? "yes" : "no");
  }
  if (!got.defined()) return "";
  const at::Tensor g = got.detach().to(at::kDouble), w = want.detach().to(at::kDouble);
  const at::Tensor fg = at::isfinite(g), fw = at::isfinite(w);
  if (!at::equal(fg, fw)) return "non-finite values at other positions";
  const double diff = (g.masked_select(fg) - w.masked_select(fw)).norm().item<double>();
  const double norm = w.masked_select(fw).norm().item<double>();
  if (diff <= 1e-6 * norm + 1e-9) return "";
  std::ostringstream out;
  out << "relative difference " << diff / (norm > 0 ? norm : 1) << " (|ref| " << norm << ")";
  return out.str();
}

Options SequenceOptions(const Sequence& seq) {
  Options o = Options::FromEnv();
  o.gradient_accumulation_steps = seq.accumulation;
  o.loss_scaling = seq.scaling ? LossScaling::kDynamic : LossScaling::kOff;
  o.init_scale = seq.init_scale;
  o.growth_interval = 2;
  o.first_bucket_bytes = 64;  // several buckets: order and overlap are exercised
  o.bucket_bytes = 256;
  o.collective_timeout = std::chrono::seconds(30);
  return o;
}

class Runner {
 public:
  Runner(const Sequence& seq, const std::string& dir) : seq_(seq), dir_(dir) {}

  // Returns "" or what differed.
  std::string Run() {
    Accelerator acc(SequenceOptions(seq_));
    const int world = acc.num_processes(), rank = acc.process_index();
    torch::manual_seed(seq_.seed);
    FuzzNet net(seq_.tied);
    torch::manual_seed(seq_.seed);
    const char* per_machine = std::getenv("LOCAL_WORLD_SIZE");  // the spawner's machines
    Reference ref(seq_, world, FuzzNet(seq_.tied), per_machine ? std::atoi(per_machine) : 0);
    net = acc.prepare(net);
    std::vector<std::unique_ptr<torch::optim::SGD>> opts;
    for (int i = 0; i < seq_.optimizers; ++i) {
      opts.push_back(MakeOptimizer(seq_, net, i));
      acc.prepare(*opts.back());
    }
    const auto pairs = Pair(net, ref.net());
    const std::string ckpt = dir_ + "/ckpt_" + std::to_string(seq_.seed);
    for (std::size_t m = 0; m < seq_.steps.size(); ++m) {
      const MicroStep& st = seq_.steps[m];
      const int micro = static_cast<int>(m);
      std::optional<AccumulateGuard> guard;
      bool sync = true;
      if (st.guard) {
        guard.emplace(acc.accumulate(net));
        sync = guard->sync_gradients();
        if (ref.Accumulate() != sync) Note(At(m, "sync_gradients differs from accelerate's"));
      }
      if (st.zero_by_hand) {
        for (auto& opt : opts) opt->zero_grad();
        ref.ZeroByHand();
      }
      if (st.throw_backward) {
        std::string what;
        try {
          acc.backward(Loss(seq_, net, rank, micro, 9).detach());
        } catch (const Error& e) {
          what = e.what();
        }
        if (what.find("does not require grad") == std::string::npos) {
          Note(At(m, "backward(detached loss) gave \"" + what + "\", not accel::Error naming it"));
        }
      }
      bool last_synced = false;
      for (int k = 0; k < st.backwards; ++k) {
        at::Tensor loss = Loss(seq_, net, rank, micro, k);
        if (rank == st.inf_rank) loss = loss * std::numeric_limits<double>::infinity();
        acc.backward(loss);
        ref.Backward(sync, micro, k, st.inf_rank);
        last_synced = sync;
      }
      if (st.guard_ends_early) guard.reset();
      const bool sync_for_step = guard ? sync : true;
      if (last_synced && ref.synced()) {
        for (const auto& p : pairs) {
          const std::string why = Compare(p.ours.grad(), p.ref.grad());
          if (!why.empty()) Note(At(m, p.name + ".grad after backward: " + why));
        }
      }
      if (st.clip) {
        const double got = acc.clip_grad_norm(0.5), want = ref.Clip(sync_for_step, 0.5);
        const std::string why = Compare(at::tensor(got), at::tensor(want));
        if (!why.empty()) Note(At(m, "clip_grad_norm " + why));
      }
      if (st.step) {
        for (int i = 0; i < seq_.optimizers; ++i) {
          const int which = st.reverse_steps ? seq_.optimizers - 1 - i : i;
          const bool got = acc.step(*opts[static_cast<std::size_t>(which)]);
          const bool want = ref.Step(sync_for_step, which);
          if (got != want) {
            Note(At(m, "step(" + std::string(which == 0 ? "A" : "B") + ") returned " +
                           (got ? "true" : "false") + ", reference " + (want ? "true" : "false")));
          }
        }
      }
      if (st.state == 1) {
        acc.save_state(ckpt);
        ref.Save();
      } else if (st.state == 2) {
        acc.load_state(ckpt);
        ref.Load();
      }
      guard.reset();
      if (acc.loss_scale() != ref.scale()) {
        Note(At(m, "loss scale " + std::to_string(acc.loss_scale()) + ", reference " +
                       std::to_string(ref.scale())));
      }
      for (const auto& p : pairs) {
        std::string why = Compare(p.ours, p.ref);
        if (!why.empty()) Note(At(m, p.name + ": " + why));
        if (ref.synced()) why = Compare(p.ours.grad(), p.ref.grad());
        if (!why.empty()) Note(At(m, p.name + ".grad: " + why));
      }
    }
    const std::string ranks = SameOnEveryRank(acc, pairs, ref.synced());
    if (!ranks.empty()) Note(ranks);
    return failure_;
  }

 private:
  // Keeps the first failure; the sequence runs on, so every rank issues the same collectives.
  void Note(const std::string& what) {
    if (failure_.empty()) failure_ = what;
  }
  std::string At(std::size_t m, const std::string& what) const {
    return "micro-step " + std::to_string(m) + ": " + what;
  }

  // Gradients only when the last backward synchronised: until then they are each rank's own.
  static std::string SameOnEveryRank(Accelerator& acc, const std::vector<Named>& pairs,
                                     bool grads) {
    std::vector<at::Tensor> parts;
    for (const auto& p : pairs) {
      parts.push_back(p.ours.detach().flatten());
      if (!grads) continue;
      const at::Tensor g = p.ours.grad();
      parts.push_back(g.defined() ? g.flatten() : at::full({p.ours.numel()}, 12345.0f));
      parts.push_back(at::full({1}, g.defined() ? 1.0f : 0.0f));
    }
    at::Tensor bits = at::cat(parts).contiguous().view(at::kInt);
    at::Tensor all = acc.gather(bits.unsqueeze(0));
    for (int r = 1; r < acc.num_processes(); ++r) {
      if (!at::equal(all[r], all[0])) {
        return "rank " + std::to_string(r) + "'s parameters or gradients differ from rank 0's";
      }
    }
    return "";
  }

  const Sequence& seq_;
  std::string dir_;
  std::string failure_;
};

int Main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: contract_rank fuzz OUT_DIR FIRST_SEED COUNT | probe OUT_DIR NAME\n";
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2];
  if (mode == "export" && argc >= 6) {
    std::ofstream file(dir);
    const std::uint64_t first = std::strtoull(argv[3], nullptr, 10);
    const std::uint64_t count = std::strtoull(argv[4], nullptr, 10);
    for (std::uint64_t s = first; s < first + count; ++s) {
      file << ExportSequence(Generate(s), std::atoi(argv[5])) << "\n";
    }
    return file.good() ? 0 : 1;
  }
  std::vector<Sequence> seqs;
  if (mode == "fuzz" && argc >= 5) {
    const std::uint64_t first = std::strtoull(argv[3], nullptr, 10);
    const std::uint64_t count = std::strtoull(argv[4], nullptr, 10);
    for (std::uint64_t s = first; s < first + count; ++s) seqs.push_back(Generate(s));
  } else if (mode == "probe") {
    seqs.push_back(Probe(argv[3]));
  } else {
    std::cerr << "unknown mode " << mode << "\n";
    return 2;
  }
  std::map<std::string, int> kinds;
  int ok = 0, mismatched = 0;
  for (const Sequence& seq : seqs) {
    const std::string why = Runner(seq, dir).Run();  // accel::Error: the rank fails, loudly
    if (why.empty()) {
      ++ok;
      ++kinds[seq.Kind()];
      std::cout << "ok " << seq.seed << " " << seq.Kind() << "\n";
    } else {
      ++mismatched;
      std::cout << "MISMATCH " << why << "\n" << seq.Describe() << std::flush;
    }
  }
  std::cout << "SUMMARY ran " << seqs.size() << " ok " << ok << " mismatched " << mismatched
            << " kinds " << kinds.size() << "\n";
  std::map<std::string, int> features;  // sequences with each feature
  for (const auto& [kind, n] : kinds) {
    std::istringstream parts(kind);
    for (std::string f; std::getline(parts, f, '+');) features[f] += n;
  }
  for (const auto& [feature, n] : features) std::cout << "FEATURE " << feature << " " << n << "\n";
  return mismatched == 0 ? 0 : 1;
}

}  // namespace
}  // namespace accel::contract

int main(int argc, char** argv) {
  return accel::RunWorker([&] { return accel::contract::Main(argc, argv); });
}
