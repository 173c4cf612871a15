#include "worker/src/progress_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "accel/error.h"

namespace accel::worker {

ProgressFile::ProgressFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("open progress file", path, std::strerror(errno));
  Write(0);
}

ProgressFile::~ProgressFile() {
  if (fd_ >= 0) ::close(fd_);
}

void ProgressFile::Write(std::uint64_t step) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(step >> (8 * i));
  if (::pwrite(fd_, bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes)) && !warned_) {
    warned_ = true;
    std::fprintf(stderr, "[accel] write progress file %s: %s (further errors ignored)\n",
                 path_.c_str(), std::strerror(errno));
  }
}

std::uint64_t DecodeProgress(const unsigned char bytes[8]) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

}  // namespace accel::worker
