// train.bin: the main job. A real training program on libaccel: an MLP or a small CNN on a
// synthetic classification set labelled by a fixed random teacher network (so the loss really
// falls), or on MNIST IDX files. Run it alone (a world of 1) or under accel-launch.
// Prints a progress line on the main process and, at the end, one JSON line:
// {"world", "grad_accum", "steps", "samples_per_sec", "loss", "first_loss", "param_checksum"}.
// Exit codes: 0 ok, 1 training failed, 2 bad flags or unreadable data.
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "accel/accelerator.h"
#include "accel/error_file.h"
#include "common/exit_codes.h"
#include "examples/idx_reader.h"
#include "examples/progress_view.h"
#include "examples/train_flags.h"
#include "examples/train_schedule.h"
#include "examples/train_trace.h"

namespace accel::examples {
namespace {

struct Dataset {
  torch::Tensor data;    // [N, input_dim] (mlp) or [N, 1, side, side] (cnn)
  torch::Tensor target;  // [N] int64
};

torch::nn::Sequential BuildMlp(int input_dim, int hidden, int layers, int classes) {
  torch::nn::Sequential net;
  for (int i = 0; i < layers; ++i) {
    const int in = i == 0 ? input_dim : hidden;
    const int out = i + 1 == layers ? classes : hidden;
    net->push_back(torch::nn::Linear(in, out));
    if (i + 1 < layers) net->push_back(torch::nn::ReLU());
  }
  return net;
}

torch::nn::Sequential BuildCnn(int side, int hidden, int classes) {
  using namespace torch::nn;
  Sequential net(Conv2d(Conv2dOptions(1, 16, 3).padding(1)), ReLU(), MaxPool2d(2),
                 Conv2d(Conv2dOptions(16, 32, 3).padding(1)), ReLU(), MaxPool2d(2), Flatten(),
                 Linear(32 * (side / 4) * (side / 4), hidden), ReLU(), Linear(hidden, classes));
  return net;
}

// Inputs ~ N(0, 1); labels = argmax of a fixed random teacher MLP. Identical on every rank.
Dataset SyntheticData(const TrainFlags& flags) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(flags.seed + 1000003);
  auto teacher = BuildMlp(flags.input_dim, 64, 2, flags.classes);
  torch::manual_seed(flags.seed + 1);
  Dataset set;
  set.data = torch::randn({flags.samples, flags.input_dim});
  set.target = teacher->forward(set.data).argmax(1);
  return set;
}

std::optional<Dataset> IdxData(const TrainFlags& flags, std::string* error) {
  auto images = ReadIdxImages(flags.data, error);
  if (!images) return std::nullopt;
  auto labels = ReadIdxLabels(LabelsPathFor(flags.data), error);
  if (!labels) return std::nullopt;
  if (static_cast<std::int64_t>(labels->size()) != images->count) {
    *error = "read IDX " + flags.data + ": " + std::to_string(images->count) + " images but " +
             std::to_string(labels->size()) + " labels";
    return std::nullopt;
  }
  Dataset set;
  auto pixels = torch::from_blob(images->pixels.data(),
                                 {images->count, images->rows * images->cols}, torch::kUInt8);
  set.data = (pixels.to(torch::kFloat32) / 255.0 - 0.1307) / 0.3081;
  set.target = torch::from_blob(labels->data(), {images->count}, torch::kUInt8).to(torch::kInt64);
  return set;
}

double ParamChecksum(torch::nn::Module& model) {
  double sum = 0;
  for (const auto& p : model.parameters())
    sum += p.detach().to(torch::kFloat64).sum().item<double>();
  return sum;
}

// The parameters' bytes hashed in order (--trace): equal on two replicas only when bitwise equal.
std::uint64_t ParamHash(torch::nn::Module& model) {
  std::uint64_t hash = kFnvOffset;
  for (const auto& p : model.parameters()) {
    const auto t = p.detach().to(torch::kCPU).contiguous();
    hash = Fnv1a(t.data_ptr(), static_cast<std::size_t>(t.numel()) * t.element_size(), hash);
  }
  return hash;
}

// Options from the environment, overridden by the flags that are libaccel settings.
Options TrainOptions(const TrainFlags& flags) {
  Options options = Options::FromEnv();
  if (flags.grad_accum) options.gradient_accumulation_steps = *flags.grad_accum;
  if (!flags.overlap) options.overlap = Overlap::kOff;
  return options;
}

// Reads --data (or makes the synthetic set) and shapes it for --model. Prints the problem and
// returns nullopt when the data cannot be read or does not fit the model.
std::optional<Dataset> LoadData(const TrainFlags& flags) {
  std::string error;
  Dataset set;
  if (flags.data.empty()) {
    set = SyntheticData(flags);
  } else if (auto read = IdxData(flags, &error)) {
    set = std::move(*read);
  } else {
    std::cerr << "train.bin: " << error << "\n";
    return std::nullopt;
  }
  if (flags.model == "cnn") {
    const auto input_dim = static_cast<int>(set.data.size(1));
    const int side = static_cast<int>(std::lround(std::sqrt(input_dim)));
    if (side * side != input_dim || side % 4 != 0) {
      std::cerr << "train.bin: --model cnn needs square inputs with a side divisible by 4, got "
                << input_dim << " features\n";
      return std::nullopt;
    }
    set.data = set.data.view({-1, 1, side, side});
  }
  return set;
}

// The prepared model, optimizer and loader of one run.
struct Job {
  torch::nn::Sequential model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  DataLoader loader;
};

// Builds the model from --seed (the same initial weights everywhere; prepare broadcasts rank 0's
// anyway) and the optimizer, and prepares them and the data loader with `acc`.
Job PrepareJob(const TrainFlags& flags, Accelerator& acc, const Dataset& set) {
  torch::manual_seed(flags.seed);
  auto model =
      flags.model == "cnn"
          ? BuildCnn(static_cast<int>(set.data.size(2)), flags.hidden, flags.classes)
          : BuildMlp(static_cast<int>(set.data.size(1)), flags.hidden, flags.layers, flags.classes);
  acc.prepare(model);  // same module: moved, broadcast from rank 0, DDP hooks
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  if (flags.optimizer == "sgd") {
    optimizer = std::make_unique<torch::optim::SGD>(model->parameters(),
                                                    torch::optim::SGDOptions(flags.lr));
  } else {
    optimizer = std::make_unique<torch::optim::AdamW>(model->parameters(),
                                                      torch::optim::AdamWOptions(flags.lr));
  }
  acc.prepare(*optimizer);
  auto loader =
      acc.prepare_loader(set.data, set.target, flags.batch_size, /*shuffle=*/true, flags.seed);
  return Job{model, std::move(optimizer), std::move(loader)};
}

// How many optimizer steps the run takes at this world size (for the progress line; --epochs
// runs end with the last epoch, whatever the world size did meanwhile).
std::int64_t TotalSteps(const TrainFlags& flags, const Accelerator& acc, const DataLoader& loader) {
  if (flags.steps > 0) return flags.steps;
  return flags.epochs * StepsPerEpoch(loader.size(), acc.gradient_accumulation_steps());
}

// Resumes from --checkpoint_dir when --resume finds a checkpoint there by load_state's rule (the
// directory, or "<dir>.old" after a crash mid-save); the loader then continues where the
// checkpoint's data stood, at this world size.
void ResumeIfAsked(const TrainFlags& flags, Accelerator& acc) {
  if (flags.resume && acc.has_state(flags.checkpoint_dir)) {
    acc.load_state(flags.checkpoint_dir);
    acc.print("resumed from ", flags.checkpoint_dir, " at step ", acc.step_count());
  }
}

// --sample-record: which samples each step trains on, one line per step, written and flushed on
// the step's last micro-step BEFORE its backward (where its gradients leave this process): every
// step this process helped train has its line, also when it is killed right after the all-reduce.
// A step abandoned by an elastic regroup is written again by the world that trains it; a rank's
// last line of a step is the one trained (tests/faults/in_place_check.py).
class SampleRecord {
 public:
  SampleRecord(const std::string& path, int rank) {
    if (!path.empty()) out_.open(path + "." + std::to_string(rank), std::ios::app);
  }
  void Fetched(const std::vector<std::int64_t>& indices) {
    if (out_.is_open()) window_.insert(window_.end(), indices.begin(), indices.end());
  }
  void Training(std::int64_t epoch, std::int64_t step) {
    if (!out_.is_open()) return;
    out_ << epoch << " " << step;
    for (std::int64_t i : window_) out_ << " " << i;
    out_ << std::endl;
    window_.clear();
  }
  void Dropped() { window_.clear(); }

 private:
  std::ofstream out_;
  std::vector<std::int64_t> window_;
};

// --step-times: when each completed step returned (and when recover() did), one line each, so a
// benchmark can time a recovery to the first step of the new world.
class StepTimes {
 public:
  StepTimes(const std::string& path, int rank) {
    if (!path.empty()) out_.open(path + "." + std::to_string(rank), std::ios::app);
  }
  // Writes "<what> N world W rank R time T", T in seconds since the epoch (the clock that
  // network namespaces on one host share).
  void Line(const char* what, std::int64_t n, const Accelerator& acc) {
    Write(what, n, acc, Now(), "");
  }
  // Before the first step: "start S world W rank R time T", T when main() began (after the
  // program's libraries loaded, before the Accelerator joined), S the step it starts after.
  void Start(const Accelerator& acc, double started) {
    Write("start", acc.step_count(), acc, started, "");
  }
  // After the last step: "final S world W rank R time T param_checksum C", every rank's
  // parameters (the JSON line is the main process's only).
  void Final(const Accelerator& acc, double param_checksum) {
    char checksum[64];
    std::snprintf(checksum, sizeof(checksum), " param_checksum %.17g", param_checksum);
    Write("final", acc.step_count(), acc, Now(), checksum);
  }
  static double Now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

 private:
  void Write(const char* what, std::int64_t n, const Accelerator& acc, double now,
             const char* tail) {
    if (!out_.is_open()) return;
    char line[224];
    std::snprintf(line, sizeof(line), "%s %lld world %d rank %d time %.6f%s\n", what,
                  static_cast<long long>(n), acc.num_processes(), acc.process_index(), now, tail);
    out_ << line << std::flush;
  }

  std::ofstream out_;
};

struct RunResult {
  ProgressSample last;     // its loss is the last optimizer step's
  double first_loss = -1;  // the first optimizer step's
};

// Trains --steps steps or --epochs epochs: progress on the main process, a checkpoint every
// --save-every steps. Elastic: a membership change throws out of a step; Accelerator::recover()
// regroups in place and the loop goes on from the last completed step.
RunResult RunSteps(const TrainFlags& flags, Accelerator& acc, Job& job, double started) {
  ProgressView progress(stdout, isatty(STDOUT_FILENO) == 1);
  const bool show_scale = acc.mixed_precision() == MixedPrecision::kFp16;
  Throughput throughput(static_cast<std::int64_t>(flags.batch_size) *
                            acc.gradient_accumulation_steps() * acc.num_processes(),
                        acc.step_count());
  SampleRecord record(flags.sample_record, acc.process_index());
  StepTimes times(flags.step_times, acc.process_index());
  times.Start(acc, started);
  TrainTrace trace(flags.trace, static_cast<int>(getpid()));
  auto at = [&] {
    return TracePoint{acc.generation(), acc.num_processes(), acc.process_index(), acc.step_count(),
                      job.loader.sampler().epoch()};
  };
  auto hash = [&] { return trace.enabled() ? ParamHash(*job.model) : 0; };
  trace.Start(at(), static_cast<int>(getpid()), hash());
  RunResult result;
  double last_loss = 0;
  auto sample = [&] {
    return ProgressSample{acc.step_count(), TotalSteps(flags, acc, job.loader), last_loss,
                          throughput.Rate(acc.step_count()), show_scale ? acc.loss_scale() : 0};
  };
  auto done = [&] { return flags.steps > 0 && acc.step_count() >= flags.steps; };
  // --min-step-ms: an optimizer step ends no sooner than this after the previous one ended
  // (until the --pace-until file exists).
  bool paced = flags.min_step_ms > 0;
  const auto pace = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double, std::milli>(flags.min_step_ms));
  auto step_began = std::chrono::steady_clock::now();
  const std::int64_t log_every = flags.log_every.value_or(acc.device().is_cuda() ? 20 : 1);
  // The whole step through compile_step (a CUDA graph where it can be): --cuda-graph.
  std::optional<CompiledStep> compiled;
  if (flags.cuda_graph == "on" || (flags.cuda_graph == "auto" && acc.device().is_cuda())) {
    compiled.emplace(acc.compile_step(
        *job.optimizer,
        [&](const torch::Tensor& data, const torch::Tensor& target) {
          return torch::nn::functional::cross_entropy(job.model->forward(data), target);
        },
        flags.max_grad_norm));
  }
  for (;;) {
    try {
      for (std::int64_t epoch = job.loader.sampler().epoch();
           !done() && (flags.steps > 0 || epoch < flags.epochs); ++epoch) {
        job.loader.set_epoch(epoch);
        const std::int64_t batches = job.loader.size();
        std::int64_t batch_index = 0;
        for (const auto& batch : job.loader) {
          const bool last_batch = ++batch_index == batches;
          record.Fetched(job.loader.last_indices());
          if (trace.enabled()) {
            const auto& s = job.loader.sampler();
            const auto& indices = job.loader.last_indices();
            trace.Fetch(at(), indices,
                        TrainTrace::Padding(s.dataset_size(), s.start(), s.num_replicas(), s.rank(),
                                            (batch_index - 1) * job.loader.batch_size(),
                                            static_cast<std::int64_t>(indices.size())));
          }
          auto sync = acc.accumulate(job.model);
          if (sync.sync_gradients()) record.Training(epoch, acc.step_count() + 1);
          torch::Tensor loss;
          if (compiled) {
            loss = (*compiled)(batch.data, batch.target);
          } else {
            loss = acc.autocast([&] {
              return torch::nn::functional::cross_entropy(job.model->forward(batch.data),
                                                          batch.target);
            });
            acc.backward(loss);
            if (flags.max_grad_norm > 0) acc.clip_grad_norm(flags.max_grad_norm);
            acc.step(*job.optimizer);  // false on a micro-step and on a step skipped by overflow
          }
          if (!sync.sync_gradients()) continue;
          const std::int64_t step = acc.step_count();
          times.Line("step", step, acc);
          const bool traced = flags.trace_params_every > 0 && step % flags.trace_params_every == 0;
          trace.Step(at(), traced, traced ? hash() : 0);
          paced =
              paced && (flags.pace_until.empty() || ::access(flags.pace_until.c_str(), F_OK) != 0);
          if (paced) {
            std::this_thread::sleep_until(step_began + pace);
            step_began = std::chrono::steady_clock::now();
          }
          const bool warmup_end = flags.warmup > 0 && step == flags.warmup;
          const bool last = done() || (flags.steps == 0 && last_batch && epoch + 1 == flags.epochs);
          // Reading the loss waits for the device: every --log-every steps, and where the clock
          // needs the device idle (the end of warm-up, the last step).
          if (result.first_loss < 0 || warmup_end || last ||
              (log_every > 0 && step % log_every == 0)) {
            last_loss = loss.item<double>();
            if (result.first_loss < 0) result.first_loss = last_loss;
            if (acc.is_main_process()) progress.Update(sample());
          }
          if (warmup_end) throughput.Restart(step);
          if (!flags.checkpoint_dir.empty() && flags.save_every > 0 &&
              step % flags.save_every == 0) {
            acc.save_state(flags.checkpoint_dir);
          }
          if (last) break;
        }
      }
      break;
    } catch (const Error&) {
      record.Dropped();
      trace.Error(at());
      if (!acc.recover()) throw;  // not an elastic membership change: fail as before
      trace.Regroup(at(), hash());
      times.Line("generation", acc.generation(), acc);
      throughput.Restart(acc.step_count());
    }
  }
  if (!flags.step_times.empty()) times.Final(acc, ParamChecksum(*job.model));
  trace.End(at(), hash());
  result.last = sample();
  if (acc.is_main_process()) progress.Finish(result.last);
  return result;
}

// Prints the final JSON line (main process): the mean last loss over ranks, the checksum and the
// communicator that carried the job's collectives.
void PrintSummary(Accelerator& acc, const RunResult& result, torch::nn::Module& model) {
  auto mean_loss = acc.reduce(torch::tensor({result.last.loss}, torch::kFloat64), ReduceOp::kAvg);
  const double checksum = ParamChecksum(model);
  char json[512];
  std::snprintf(json, sizeof(json),
                "{\"world\": %d, \"grad_accum\": %d, \"steps\": %lld, \"samples_per_sec\": %.1f, "
                "\"loss\": %.6f, \"first_loss\": %.6f, \"param_checksum\": %.10g, "
                "\"backend\": \"%s\"}",
                acc.num_processes(), acc.gradient_accumulation_steps(),
                static_cast<long long>(acc.step_count()), result.last.samples_per_sec,
                mean_loss.item<double>(), result.first_loss, checksum,
                acc.communicator().name().c_str());
  acc.print(json);
}

int Train(const TrainFlags& flags) {
  const double started = StepTimes::Now();
  Accelerator acc(TrainOptions(flags));
  std::optional<Dataset> set = LoadData(flags);
  if (!set) return accel::kExitUsage;
  if (flags.device_data) {  // batches are then gathered on the device, like a GPU-resident set
    set->data = set->data.to(acc.device());
    set->target = set->target.to(acc.device());
  }
  Job job = PrepareJob(flags, acc, *set);
  ResumeIfAsked(flags, acc);
  const RunResult result = RunSteps(flags, acc, job, started);
  if (!flags.checkpoint_dir.empty()) acc.save_state(flags.checkpoint_dir);
  PrintSummary(acc, result, *job.model);
  return accel::kExitOk;
}

}  // namespace
}  // namespace accel::examples

int main(int argc, char** argv) {
  using namespace accel::examples;
  std::string error;
  auto flags = ParseTrainFlags(std::vector<std::string>(argv + 1, argv + argc), &error);
  if (!flags) {
    std::cerr << error;
    return accel::kExitUsage;
  }
  if (flags->help) {
    std::cout << TrainUsage();
    return accel::kExitOk;
  }
  // A failure is printed, written to $ACCEL_ERROR_FILE for the launcher's report, and exits 1.
  return accel::RunWorker([&] { return Train(*flags); });
}
