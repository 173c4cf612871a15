// The elastic launcher's membership notices to a libaccel worker (ACCEL_GENERATION_FILE,
// common/env_contract.h): one file of "key=value" lines that the launcher replaces (write +
// rename) at every membership change, and a thread that notices a newer generation. No LibTorch.
#ifndef ACCEL_WORKER_ELASTIC_GENERATION_H_
#define ACCEL_WORKER_ELASTIC_GENERATION_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace accel::worker {

// One generation of an elastic job as this machine's workers see it.
struct Generation {
  std::int64_t number = -1;
  int world = 0;                   // WORLD_SIZE
  int base_rank = 0;               // RANK = base_rank + LOCAL_RANK
  int group_rank = 0;              // GROUP_RANK: this machine's index in the generation
  int group_world = 0;             // GROUP_WORLD_SIZE
  int local_world = 0;             // LOCAL_WORLD_SIZE
  std::int64_t store_attempt = 0;  // the store namespace (run id, attempt) of the generation
  int master_port = 0;
  // Set in the file the launcher writes before it starts a machine's workers into a running
  // in-place job (scale-up, or a machine that comes back): they receive the training state from
  // the workers that kept theirs instead of starting it (docs/libaccel.md "In-place recovery").
  // Optional in the text (absent: false).
  bool joining = false;
  // How long Accelerator::recover() waits for the generation after this one, in ms: the launcher
  // writes its rdzv_timeout and a margin, so the workers wait as long as the rendezvous waits for
  // a replacement. Optional in the text (absent or 0: Options::connect_timeout).
  std::int64_t recover_timeout_ms = 0;

  // The text the launcher writes (and ParseGeneration reads).
  std::string Format() const;
};

// Parses the file's text; nullopt with `error` set when a key is missing or malformed.
std::optional<Generation> ParseGeneration(const std::string& text, std::string* error);

// Reads `path`; nullopt when it does not exist yet or does not parse (`error` says which).
std::optional<Generation> ReadGeneration(const std::string& path, std::string* error);

// Writes `generation` to `path` atomically (a temp file beside it, then rename). Returns false
// with `error` set on failure. Used by the launcher and by tests playing it.
bool WriteGeneration(const std::string& path, const Generation& generation, std::string* error);

// Polls `path` every `period` on its own thread; when it holds a generation newer than `known`,
// calls `on_newer(number)` once for it (from that thread; the callee checks `number` against what
// it uses under its own lock: a regroup may have read the file first). Stopped and joined by the
// destructor.
class GenerationWatch {
 public:
  GenerationWatch(std::string path, std::int64_t known, std::function<void(std::int64_t)> on_newer,
                  std::chrono::milliseconds period = std::chrono::milliseconds(20));
  ~GenerationWatch();
  GenerationWatch(const GenerationWatch&) = delete;
  GenerationWatch& operator=(const GenerationWatch&) = delete;

  // The generation now in use (after a regroup): only a newer one calls on_newer again.
  void set_known(std::int64_t known);

 private:
  void Loop();

  const std::string path_;
  const std::function<void(std::int64_t)> on_newer_;
  const std::chrono::milliseconds period_;
  std::atomic<std::int64_t> known_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// Waits up to `timeout` for `path` to hold a generation newer than `known`; nullopt at the
// deadline (`error` says what was last seen).
std::optional<Generation> WaitForGeneration(const std::string& path, std::int64_t known,
                                            std::chrono::milliseconds timeout, std::string* error);

}  // namespace accel::worker

#endif  // ACCEL_WORKER_ELASTIC_GENERATION_H_
