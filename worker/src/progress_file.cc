#include "worker/src/progress_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "accel/error.h"
#include "common/progress_record.h"
#include "common/safe_open.h"

namespace accel::worker {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the progress file's words are little-endian: stored as native words");

ProgressFile::ProgressFile(const std::string& path) {
  // A new file, never through a symlink or into a file someone else made (common/safe_open.h);
  // a leftover of this user's own (the path given again) is replaced.
  fd_ = safe_open::CreateNewAt(AT_FDCWD, path.c_str(), O_RDWR, 0600);
  if (fd_ < 0 && errno == EEXIST) {
    const int old = safe_open::OpenOwnedAt(AT_FDCWD, path.c_str(), O_RDONLY, false);
    if (old >= 0) {
      ::close(old);
      ::unlink(path.c_str());
      fd_ = safe_open::CreateNewAt(AT_FDCWD, path.c_str(), O_RDWR, 0600);
    } else {
      throw Error("create progress file", path,
                  "it exists and is not a file of yours (a symlink, another user's): refused");
    }
  }
  if (fd_ < 0) throw Error("create progress file", path, std::strerror(errno));
  void* mapped = MAP_FAILED;
  if (::ftruncate(fd_, progress::kFileBytes) == 0) {
    mapped = ::mmap(nullptr, progress::kFileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  }
  if (mapped == MAP_FAILED) {
    const int err = errno;
    ::close(fd_);
    throw Error("map progress file", path, std::strerror(err));
  }
  words_ = static_cast<std::uint64_t*>(mapped);
}

ProgressFile::~ProgressFile() {
  ::munmap(words_, progress::kFileBytes);
  ::close(fd_);
}

void ProgressFile::Write(std::uint64_t step) {
  __atomic_store_n(&words_[progress::kStepWord], step, __ATOMIC_RELEASE);
}

namespace {
thread_local bool t_overlap_thread = false;  // collectives here overlap compute: not timed
}  // namespace

void ProgressFile::MarkOverlapThread() { t_overlap_thread = true; }

void ProgressFile::CollectiveStarted() {
  if (!t_overlap_thread) WaitStarted();
  __atomic_fetch_add(&words_[progress::kStartedWord], 1, __ATOMIC_RELEASE);
}

void ProgressFile::CollectiveDone() {
  if (!t_overlap_thread) WaitDone();
  __atomic_fetch_add(&words_[progress::kDoneWord], 1, __ATOMIC_RELEASE);
}

void ProgressFile::WaitStarted() {
  std::lock_guard<std::mutex> lock(mu_);
  if (waiting_++ != 0) return;
  since_ = std::chrono::steady_clock::now();
  // steady_clock is CLOCK_MONOTONIC: the launcher on this machine reads the same clock.
  const auto since_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(since_.time_since_epoch()).count();
  __atomic_store_n(&words_[progress::kWaitSinceWord], static_cast<std::uint64_t>(since_ns),
                   __ATOMIC_RELEASE);
}

void ProgressFile::WaitDone() {
  std::lock_guard<std::mutex> lock(mu_);
  if (waiting_ > 0 && --waiting_ == 0) {
    // A reader between these two stores misses this wait for a moment; it never counts it twice.
    __atomic_store_n(&words_[progress::kWaitSinceWord], 0, __ATOMIC_RELEASE);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - since_)
                        .count();
    __atomic_fetch_add(&words_[progress::kCollectiveNanosWord], static_cast<std::uint64_t>(ns),
                       __ATOMIC_RELEASE);
  }
}

void ProgressFile::AddSamples(std::int64_t samples) {
  if (samples <= 0) return;
  __atomic_fetch_add(&words_[progress::kSamplesWord], static_cast<std::uint64_t>(samples),
                     __ATOMIC_RELEASE);
}

}  // namespace accel::worker
