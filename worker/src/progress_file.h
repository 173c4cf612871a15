// ProgressFile: what the launcher polls for hang detection and the job's status
// (ACCEL_PROGRESS_FILE, common/env_contract.h), laid out as common/progress_record.h says: the
// optimizer-step counter, the counts of collectives started and completed, the time with a
// collective in flight and the samples handed out. The file is mapped shared and each word is
// updated with one atomic store, so updating costs no system call and a reader sees each word
// old or new. Owns its mapping and fd (O_CLOEXEC). Thread-safe.
#ifndef ACCEL_WORKER_PROGRESS_FILE_H_
#define ACCEL_WORKER_PROGRESS_FILE_H_

#include <chrono>
#include <cstdint>
#include <mutex>
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
  // Counts a collective as started (before it is issued) and as done (after it completed). A
  // collective on the training thread is also a wait (below); one on a thread marked with
  // MarkOverlapThread is only counted.
  void CollectiveStarted();
  void CollectiveDone();
  // Brackets time the training thread is blocked on communication (a collective it runs, or
  // DDP's end of backward waiting for the buckets of the communication thread). The time from
  // the first of nested waits starting to the last one ending is added to the collective time:
  // what is left of a step is the rank's own work, so a straggler's stopped or slow time counts
  // as its own and its peers' waiting for it does not.
  void WaitStarted();
  void WaitDone();
  // Marks the calling thread as one whose collectives overlap compute (DDP's communication
  // thread): they are counted, not timed.
  static void MarkOverlapThread();
  // Adds `samples` to the samples handed out.
  void AddSamples(std::int64_t samples);

 private:
  std::uint64_t* words_ = nullptr;  // the shared mapping
  int fd_ = -1;
  std::mutex mu_;                                // guards the two below
  int waiting_ = 0;                              // waits started and not done
  std::chrono::steady_clock::time_point since_;  // when waiting_ last became 1
};

}  // namespace accel::worker

#endif  // ACCEL_WORKER_PROGRESS_FILE_H_
