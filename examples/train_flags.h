// TrainFlags: the command line of the example trainer train.bin, parsed without LibTorch.
#ifndef ACCEL_EXAMPLES_TRAIN_FLAGS_H_
#define ACCEL_EXAMPLES_TRAIN_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accel::examples {

struct TrainFlags {
  std::string model = "mlp";  // mlp | cnn
  int input_dim = 784;
  int hidden = 256;
  int layers = 3;  // Linear layers: input→hidden→…→classes
  int classes = 10;
  std::int64_t samples = 8192;  // synthetic set size (ignored with --data)
  std::string data;             // MNIST IDX images file; labels next to it
  int batch_size = 64;          // per process, per micro-step
  std::int64_t steps = 0;       // optimizer steps; 0 = use --epochs
  int epochs = 1;
  double lr = 1e-3;
  std::string optimizer = "adamw";  // sgd | adamw
  std::optional<int> grad_accum;    // default: the launcher's config/env
  std::string checkpoint_dir;
  std::string sample_record;  // PATH: "epoch step index..." per step, before it, to PATH.<rank>
  std::string step_times;     // PATH: "step S world W rank R time T" per completed step
  std::string trace;          // PATH: every step, regroup and samples to PATH.<pid> (train_trace.h)
  std::int64_t trace_params_every = 0;  // --trace: parameter hash every N steps too; 0: changes
  bool resume = false;
  std::int64_t save_every = 0;  // optimizer steps between checkpoints; 0 = only at the end
  std::int64_t warmup = 0;      // steps excluded from samples/s
  std::uint64_t seed = 0;
  double max_grad_norm = 0;  // 0 = no clipping
  bool overlap = true;       // --no-overlap: all-reduce after backward (benchmarks)
  bool device_data = false;  // --device-data: the whole set on the training device (benchmarks)
  // Read the loss every N steps (and first, warm-up end, last); 0: only those; unset: every
  // step on a CPU, every 20th on a GPU (a read waits for the device).
  std::optional<std::int64_t> log_every;
  std::string cuda_graph = "auto";  // auto | on | off: Accelerator::compile_step (auto: on CUDA)
  double min_step_ms = 0;  // each optimizer step lasts at least this long (a sleep after it)
  std::string pace_until;  // PATH: --min-step-ms ends once PATH exists
  bool help = false;
};

// Parses argv[1..]. On a bad flag returns nullopt and writes "train.bin: <problem>" lines to
// `error` (all problems at once).
std::optional<TrainFlags> ParseTrainFlags(const std::vector<std::string>& args, std::string* error);

// The --help text.
std::string TrainUsage();

}  // namespace accel::examples

#endif  // ACCEL_EXAMPLES_TRAIN_FLAGS_H_
