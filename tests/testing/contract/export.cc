#include "tests/testing/contract/export.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "tests/testing/contract/reference.h"

namespace accel::contract {
namespace {

void Values(std::ostringstream& out, const at::Tensor& t) {
  if (!t.defined()) {
    out << "null";
    return;
  }
  const at::Tensor flat = t.detach().to(at::kFloat).contiguous().flatten();
  const float* v = flat.data_ptr<float>();
  out << "[";
  char buf[32];
  for (std::int64_t i = 0; i < flat.numel(); ++i) {
    // JSON has no inf/nan: Python's json module reads these spellings.
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v[i]));
    const std::string s = buf;
    out << (i ? "," : "")
        << (s == "inf"                  ? "Infinity"
            : s == "-inf"               ? "-Infinity"
            : s == "nan" || s == "-nan" ? "NaN"
                                        : s);
  }
  out << "]";
}

// Each parameter tensor once, by its first name.
void Named(std::ostringstream& out, FuzzNet& net, bool grads) {
  std::unordered_set<const c10::TensorImpl*> seen;
  out << "{";
  bool first = true;
  for (const auto& item : net->named_parameters()) {
    if (!seen.insert(item.value().unsafeGetTensorImpl()).second) continue;
    out << (first ? "" : ",") << "\"" << item.key() << "\":";
    Values(out, grads ? item.value().grad() : item.value());
    first = false;
  }
  out << "}";
}

}  // namespace

std::string ExportSequence(const Sequence& seq, int world) {
  std::ostringstream out;
  out.precision(17);
  out << "{\"seed\":" << seq.seed << ",\"world\":" << world
      << ",\"accumulation\":" << seq.accumulation << ",\"scaling\":" << seq.scaling
      << ",\"init_scale\":" << seq.init_scale << ",\"optimizers\":" << seq.optimizers
      << ",\"assignment\":" << seq.assignment << ",\"tied\":" << seq.tied << ",\"steps\":[";
  for (std::size_t m = 0; m < seq.steps.size(); ++m) {
    const MicroStep& st = seq.steps[m];
    out << (m ? "," : "") << "{\"guard\":" << st.guard << ",\"ends_early\":" << st.guard_ends_early
        << ",\"zero\":" << st.zero_by_hand << ",\"backwards\":" << st.backwards
        << ",\"throw\":" << st.throw_backward << ",\"inf_rank\":" << st.inf_rank
        << ",\"clip\":" << st.clip << ",\"step\":" << st.step << ",\"reverse\":" << st.reverse_steps
        << ",\"state\":" << st.state << "}";
  }
  torch::manual_seed(seq.seed);  // as contract_rank: the same initial parameters
  Reference ref(seq, world, FuzzNet(seq.tied));
  out << "],\"init\":";
  Named(out, ref.net(), false);
  out << ",\"data\":[";
  for (std::size_t m = 0; m < seq.steps.size(); ++m) {
    out << (m ? "," : "") << "[";
    for (int k = 0; k < seq.steps[m].backwards; ++k) {
      out << (k ? "," : "") << "[";
      for (int r = 0; r < world; ++r) {
        const Batch b = Data(seq, r, static_cast<int>(m), k);
        out << (r ? "," : "") << "{\"x\":";
        Values(out, b.x);
        out << ",\"y\":";
        Values(out, b.y);
        out << ",\"c\":" << b.use_c << "}";
      }
      out << "]";
    }
    out << "]";
  }
  // The reference's calls, in contract_rank's order (Runner::Run).
  std::ostringstream stepped, clips;
  for (std::size_t m = 0; m < seq.steps.size(); ++m) {
    const MicroStep& st = seq.steps[m];
    bool sync = true;
    if (st.guard) sync = ref.Accumulate();
    if (st.zero_by_hand) ref.ZeroByHand();
    for (int k = 0; k < st.backwards; ++k) ref.Backward(sync, static_cast<int>(m), k, st.inf_rank);
    const bool sync_for_step = st.guard && !st.guard_ends_early ? sync : true;
    if (st.clip) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", ref.Clip(sync_for_step, 0.5));
      const std::string v = buf;
      clips << (clips.tellp() > 0 ? "," : "")
            << (v == "inf"                  ? "Infinity"
                : v == "nan" || v == "-nan" ? "NaN"
                                            : v);
    }
    if (st.step) {
      for (int i = 0; i < seq.optimizers; ++i) {
        const int which = st.reverse_steps ? seq.optimizers - 1 - i : i;
        stepped << (stepped.tellp() > 0 ? "," : "") << ref.Step(sync_for_step, which);
      }
    }
    if (st.state == 1) ref.Save();
    if (st.state == 2) ref.Load();
    ref.scale();  // contract_rank reads the scale after every micro-step
  }
  out << "],\"ref\":{\"params\":";
  Named(out, ref.net(), false);
  out << ",\"grads\":";
  Named(out, ref.net(), true);
  out << ",\"synced\":" << ref.synced() << ",\"stepped\":[" << stepped.str() << "],\"clips\":["
      << clips.str() << "],\"scale\":" << ref.scale() << "}}";
  return out.str();
}

}  // namespace accel::contract
