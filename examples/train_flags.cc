#include "examples/train_flags.h"

#include <charconv>
#include <functional>
#include <map>
#include <sstream>

namespace accel::examples {
namespace {

template <typename T>
bool ParseNumber(const std::string& text, T* out) {
  if constexpr (std::is_floating_point_v<T>) {
    try {
      size_t used = 0;
      *out = static_cast<T>(std::stod(text, &used));
      return used == text.size();
    } catch (...) {
      return false;
    }
  } else {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
    return ec == std::errc() && end == text.data() + text.size();
  }
}

}  // namespace

std::string TrainUsage() {
  return R"(usage: train.bin [flags]    (run it under accel-launch for several processes)
  --model mlp|cnn            model (default mlp)
  --input-dim N --hidden N --layers N --classes N
                             MLP sizes; --layers counts Linear layers (default 784 256 3 10)
  --samples N                synthetic samples from a fixed random teacher (default 8192)
  --data PATH                MNIST IDX images file (labels: the matching *-labels-idx1-ubyte)
  --batch-size N             per process, per micro-step (default 64)
  --steps N | --epochs N     optimizer steps, or epochs (default 1 epoch)
  --lr X --optimizer sgd|adamw --max-grad-norm X
  --grad-accum N             micro-steps per optimizer step (default: from accel-launch)
  --checkpoint-dir DIR --resume --save-every N
                             (--resume continues the data where the checkpoint stood, also at
                             another world size)
  --sample-record PATH       each process appends "epoch step index..." for each step, before
                             it trains it (a step redone after a regroup again: the last line of
                             a step is the one trained), to PATH.<its rank at start>
  --step-times PATH          each process appends "start S world W rank R time T" (T: when its
                             main() began), then "step S world W rank R time T" per completed
                             step to PATH.<its rank at start> (T: seconds since the epoch, when
                             the step returned; benchmarks: bench/recovery_bench_libaccel.py),
                             and at the end "final S world W rank R time T param_checksum C"
  --trace PATH               each process appends to PATH.<its pid> a line per fetched batch
                             (step, generation, epoch, rank, its samples), per completed step
                             (time), per start and per membership change (step, world and a
                             hash of its parameters, bit for bit): examples/train_trace.h
  --trace-params-every N     --trace: the parameter hash on every Nth step line too (default 0:
                             at the start, every membership change and the end only)
  --warmup N                 steps left out of samples/s (default 0)
  --seed N                   data, teacher and init seed (default 0)
  --no-overlap               all-reduce after backward instead of during it (benchmarks)
  --device-data              keep the whole data set on the training device; batches are
                             gathered there (benchmarks: no host-to-device copy of the data)
  --log-every N              read the loss (a device sync) and show progress every N steps,
                             plus the first, the end of warm-up and the last; 0: only those
                             (default 1 on a CPU, 20 on a GPU)
  --cuda-graph auto|on|off   the step through Accelerator::compile_step: captured in a CUDA
                             graph and replayed where it can be, else eager with a notice
                             (default auto: on a CUDA device only)
  --min-step-ms X            each optimizer step lasts at least X ms (a sleep after a faster
                             one; the math is unchanged): a job that keeps training for a
                             while on little CPU (tests/faults: jobs a stranger attacks)
  --pace-until PATH          --min-step-ms ends once PATH exists (the rest at full speed)
)";
}

std::optional<TrainFlags> ParseTrainFlags(const std::vector<std::string>& args,
                                          std::string* error) {
  TrainFlags flags;
  std::ostringstream problems;
  using Setter = std::function<bool(const std::string&)>;
  auto num = [](auto* field) -> Setter {
    return [field](const std::string& v) { return ParseNumber(v, field); };
  };
  auto str = [](std::string* field) -> Setter {
    return [field](const std::string& v) {
      *field = v;
      return !v.empty();
    };
  };
  int grad_accum = 0;
  const std::map<std::string, Setter> with_value = {
      {"model",
       [&](const std::string& v) {
         flags.model = v;
         return v == "mlp" || v == "cnn";
       }},
      {"input-dim", num(&flags.input_dim)},
      {"hidden", num(&flags.hidden)},
      {"layers", num(&flags.layers)},
      {"classes", num(&flags.classes)},
      {"samples", num(&flags.samples)},
      {"data", str(&flags.data)},
      {"batch-size", num(&flags.batch_size)},
      {"steps", num(&flags.steps)},
      {"epochs", num(&flags.epochs)},
      {"lr", num(&flags.lr)},
      {"optimizer",
       [&](const std::string& v) {
         flags.optimizer = v;
         return v == "sgd" || v == "adamw";
       }},
      {"grad-accum",
       [&](const std::string& v) {
         bool ok = ParseNumber(v, &grad_accum) && grad_accum >= 1;
         if (ok) flags.grad_accum = grad_accum;
         return ok;
       }},
      {"checkpoint-dir", str(&flags.checkpoint_dir)},
      {"sample-record", str(&flags.sample_record)},
      {"step-times", str(&flags.step_times)},
      {"trace", str(&flags.trace)},
      {"trace-params-every", num(&flags.trace_params_every)},
      {"save-every", num(&flags.save_every)},
      {"warmup", num(&flags.warmup)},
      {"seed", num(&flags.seed)},
      {"max-grad-norm", num(&flags.max_grad_norm)},
      {"log-every",
       [&](const std::string& v) {
         std::int64_t n = 0;
         const bool ok = ParseNumber(v, &n);
         if (ok) flags.log_every = n;
         return ok;
       }},
      {"cuda-graph",
       [&](const std::string& v) {
         flags.cuda_graph = v;
         return v == "auto" || v == "on" || v == "off";
       }},
      {"min-step-ms", num(&flags.min_step_ms)},
      {"pace-until", str(&flags.pace_until)},
  };
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "-h" || arg == "--help") {
      flags.help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      problems << "train.bin: unexpected argument '" << arg << "' (see --help)\n";
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    for (char& c : name) c = c == '_' ? '-' : c;
    if (name == "resume") {
      flags.resume = true;
      continue;
    }
    if (name == "no-overlap") {
      flags.overlap = false;
      continue;
    }
    if (name == "device-data") {
      flags.device_data = true;
      continue;
    }
    auto it = with_value.find(name);
    if (it == with_value.end()) {
      problems << "train.bin: unknown flag --" << name << " (see --help)\n";
      continue;
    }
    if (!value) {
      if (i + 1 >= args.size()) {
        problems << "train.bin: --" << name << " needs a value\n";
        continue;
      }
      value = args[++i];
    }
    if (!it->second(*value)) {
      problems << "train.bin: bad value '" << *value << "' for --" << name << "\n";
    }
  }
  auto positive = [&](const char* name, std::int64_t v) {
    if (v <= 0) problems << "train.bin: --" << name << " must be positive, got " << v << "\n";
  };
  positive("input-dim", flags.input_dim);
  positive("hidden", flags.hidden);
  positive("classes", flags.classes);
  positive("batch-size", flags.batch_size);
  positive("epochs", flags.epochs);
  positive("samples", flags.samples);
  if (flags.layers < 1) problems << "train.bin: --layers must be at least 1\n";
  if (flags.steps < 0) problems << "train.bin: --steps must not be negative\n";
  if (flags.warmup < 0 || (flags.steps > 0 && flags.warmup >= flags.steps)) {
    problems << "train.bin: --warmup must be in [0, --steps), got " << flags.warmup << "\n";
  }
  if (flags.trace_params_every < 0) {
    problems << "train.bin: --trace-params-every must not be negative\n";
  }
  if (flags.min_step_ms < 0) problems << "train.bin: --min-step-ms must not be negative\n";
  if (flags.log_every && *flags.log_every < 0)
    problems << "train.bin: --log-every must not be negative\n";
  if (flags.lr <= 0) problems << "train.bin: --lr must be positive\n";
  if (flags.resume && flags.checkpoint_dir.empty()) {
    problems << "train.bin: --resume needs --checkpoint-dir\n";
  }
  *error = problems.str();
  if (!error->empty()) return std::nullopt;
  return flags;
}

}  // namespace accel::examples
