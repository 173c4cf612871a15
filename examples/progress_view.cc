#include "examples/progress_view.h"

#include <cmath>
#include <cstdio>

namespace accel::examples {
namespace {

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  long s = std::lround(seconds);
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof(text), "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  } else {
    std::snprintf(text, sizeof(text), "%02ld:%02ld", s / 60, s % 60);
  }
  return text;
}

}  // namespace

ProgressView::ProgressView(std::FILE* out, bool is_terminal, double plain_every_s)
    : out_(out),
      is_terminal_(is_terminal),
      plain_every_s_(plain_every_s),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

std::string ProgressView::Format(const ProgressSample& sample, double eta_s, int bar_width) {
  std::string line;
  if (bar_width > 0) {
    double done = sample.total_steps > 0
                      ? static_cast<double>(sample.step) / static_cast<double>(sample.total_steps)
                      : 0.0;
    int filled = static_cast<int>(std::lround(done * bar_width));
    line += "[" + std::string(filled, '#') + std::string(bar_width - filled, '.') + "] ";
  }
  char text[160];
  std::snprintf(text, sizeof(text), "step %lld/%lld  loss %.4f  %.0f samples/s  ETA %s",
                static_cast<long long>(sample.step), static_cast<long long>(sample.total_steps),
                sample.loss, sample.samples_per_sec, FormatDuration(eta_s).c_str());
  line += text;
  if (sample.loss_scale > 0) {
    std::snprintf(text, sizeof(text), "  scale %g", sample.loss_scale);
    line += text;
  }
  return line;
}

void ProgressView::Update(const ProgressSample& sample) {
  auto now = std::chrono::steady_clock::now();
  double since = std::chrono::duration<double>(now - last_draw_).count();
  if (drawn_ && since < (is_terminal_ ? 0.1 : plain_every_s_)) return;
  Draw(sample, false);
}

void ProgressView::Finish(const ProgressSample& sample) { Draw(sample, true); }

void ProgressView::Draw(const ProgressSample& sample, bool final) {
  auto now = std::chrono::steady_clock::now();
  double elapsed = std::chrono::duration<double>(now - start_).count();
  double eta = sample.step > 0 ? elapsed / static_cast<double>(sample.step) *
                                     static_cast<double>(sample.total_steps - sample.step)
                               : -1;
  if (is_terminal_) {
    std::fprintf(out_, "\r\033[K%s%s", Format(sample, eta, 30).c_str(), final ? "\n" : "");
  } else {
    std::fprintf(out_, "%s\n", Format(sample, eta, 0).c_str());
  }
  std::fflush(out_);
  last_draw_ = now;
  drawn_ = true;
}

}  // namespace accel::examples
