// ProgressFile: the optimizer-step counter that the launcher polls for hang detection
// (ACCEL_PROGRESS_FILE, common/env_contract.h): 8 bytes, little-endian, rewritten in place with
// one pwrite per step so a reader sees the old or the new value. Owns its fd (O_CLOEXEC).
#ifndef ACCEL_WORKER_PROGRESS_FILE_H_
#define ACCEL_WORKER_PROGRESS_FILE_H_

#include <cstdint>
#include <string>

namespace accel::worker {

class ProgressFile {
 public:
  // Creates or truncates `path` and writes 0. Throws accel::Error when it cannot be opened.
  explicit ProgressFile(const std::string& path);
  ~ProgressFile();
  ProgressFile(const ProgressFile&) = delete;
  ProgressFile& operator=(const ProgressFile&) = delete;

  // Writes `step`. Never blocks on anything but the local filesystem; failures are ignored after
  // the first one is reported on stderr (progress reporting must not kill training).
  void Write(std::uint64_t step);

 private:
  std::string path_;
  int fd_ = -1;
  bool warned_ = false;
};

// Decodes the 8 little-endian bytes (for tests and the launcher's poller).
std::uint64_t DecodeProgress(const unsigned char bytes[8]);

}  // namespace accel::worker

#endif  // ACCEL_WORKER_PROGRESS_FILE_H_
