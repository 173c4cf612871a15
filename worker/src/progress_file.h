// ProgressFile: what the launcher polls for hang detection (ACCEL_PROGRESS_FILE,
// common/env_contract.h), laid out as common/progress_record.h says: the optimizer-step counter
// and the counts of collectives started and completed. The file is mapped shared and each word
// is updated with one atomic store, so updating costs no system call and a reader sees each word
// old or new. Owns its mapping and fd (O_CLOEXEC). Thread-safe.
#ifndef ACCEL_WORKER_PROGRESS_FILE_H_
#define ACCEL_WORKER_PROGRESS_FILE_H_

#include <cstdint>
#include <string>

namespace accel::worker {

class ProgressFile {
 public:
  // Creates or truncates `path` to the record's size, all zero, and maps it. Throws accel::Error
  // when it cannot be created or mapped.
  explicit ProgressFile(const std::string& path);
  ~ProgressFile();
  ProgressFile(const ProgressFile&) = delete;
  ProgressFile& operator=(const ProgressFile&) = delete;

  // Sets the step counter to `step`.
  void Write(std::uint64_t step);
  // Counts a collective as started (before it is issued) and as done (after it completed).
  void CollectiveStarted();
  void CollectiveDone();

 private:
  std::uint64_t* words_ = nullptr;  // the shared mapping
  int fd_ = -1;
};

}  // namespace accel::worker

#endif  // ACCEL_WORKER_PROGRESS_FILE_H_
