// MakeInterruptibleKv (kv.h): a Get that waits in slices and asks between them whether to stop.
#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "accel/error.h"
#include "worker/src/store/kv.h"

namespace accel::worker {
namespace {

class InterruptibleKv : public Kv {
 public:
  InterruptibleKv(std::unique_ptr<Kv> inner, std::function<std::string()> interrupted,
                  std::chrono::milliseconds slice)
      : inner_(std::move(inner)), interrupted_(std::move(interrupted)), slice_(slice) {}

  void Set(const std::string& key, const std::string& value) override { inner_->Set(key, value); }

  std::string Get(const std::string& key, std::chrono::milliseconds timeout) override {
    if (std::optional<std::string> value = TryGet(key, timeout)) return *std::move(value);
    throw Error("store get", key,
                "deadline of " + std::to_string(timeout.count()) + " ms exceeded (never set)");
  }

  std::optional<std::string> TryGet(const std::string& key,
                                    std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (std::string why = interrupted_(); !why.empty()) throw Error("store get", key, why);
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      // The last slice may be 0 ms: one more look, then the deadline.
      const auto wait = std::max(std::chrono::milliseconds(0), std::min(left, slice_));
      if (std::optional<std::string> value = inner_->TryGet(key, wait)) return value;
      if (left <= slice_) return std::nullopt;
    }
  }

 private:
  std::unique_ptr<Kv> inner_;
  std::function<std::string()> interrupted_;
  std::chrono::milliseconds slice_;
};

}  // namespace

std::unique_ptr<Kv> MakeInterruptibleKv(std::unique_ptr<Kv> inner,
                                        std::function<std::string()> interrupted,
                                        std::chrono::milliseconds slice) {
  return std::make_unique<InterruptibleKv>(std::move(inner), std::move(interrupted),
                                           std::max(slice, std::chrono::milliseconds(1)));
}

}  // namespace accel::worker
