// ProgressView: the trainer's progress line on the main process.
// On a terminal it redraws one bar in place; otherwise it prints a plain line every
// `plain_every` seconds (and at the end), so logs stay readable. Not thread-safe.
#ifndef ACCEL_EXAMPLES_PROGRESS_VIEW_H_
#define ACCEL_EXAMPLES_PROGRESS_VIEW_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace accel::examples {

struct ProgressSample {
  std::int64_t step = 0;  // optimizer steps done
  std::int64_t total_steps = 0;
  double loss = 0;
  double samples_per_sec = 0;
  double loss_scale = 0;  // 0 = not shown (no fp16)
};

class ProgressView {
 public:
  // `out` is where lines go; `is_terminal` picks the redraw mode.
  ProgressView(std::FILE* out, bool is_terminal, double plain_every_s = 2.0);

  // Shows `sample` (rate-limited: ~10 redraws/s on a terminal).
  void Update(const ProgressSample& sample);
  // Shows the final state and ends the line.
  void Finish(const ProgressSample& sample);

  // Formats one line, without control characters; exposed for tests.
  static std::string Format(const ProgressSample& sample, double eta_s, int bar_width);

 private:
  void Draw(const ProgressSample& sample, bool final);

  std::FILE* out_;
  bool is_terminal_;
  double plain_every_s_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  bool drawn_ = false;
};

// Samples per second since the clock last (re)started: at the start, then after --warmup steps.
class Throughput {
 public:
  Throughput(std::int64_t samples_per_step, std::int64_t step)
      : samples_per_step_(samples_per_step) {
    Restart(step);
  }
  void Restart(std::int64_t step) {
    start_ = std::chrono::steady_clock::now();
    from_step_ = step;
  }
  double Rate(std::int64_t step) const {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    return elapsed > 0 ? static_cast<double>((step - from_step_) * samples_per_step_) / elapsed : 0;
  }

 private:
  std::int64_t samples_per_step_;
  std::chrono::steady_clock::time_point start_;
  std::int64_t from_step_ = 0;
};

}  // namespace accel::examples

#endif  // ACCEL_EXAMPLES_PROGRESS_VIEW_H_
