#include "worker/src/progress_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "accel/error.h"
#include "common/progress_record.h"

namespace accel::worker {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the progress file's words are little-endian: stored as native words");

ProgressFile::ProgressFile(const std::string& path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("open progress file", path, std::strerror(errno));
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

void ProgressFile::CollectiveStarted() {
  __atomic_fetch_add(&words_[progress::kStartedWord], 1, __ATOMIC_RELEASE);
}

void ProgressFile::CollectiveDone() {
  __atomic_fetch_add(&words_[progress::kDoneWord], 1, __ATOMIC_RELEASE);
}

}  // namespace accel::worker
