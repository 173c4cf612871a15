#include "worker/src/comm/shm/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "accel/error.h"

namespace accel::worker::shm {
namespace {

std::size_t HeaderBytes(int ranks) {
  return sizeof(Header) + sizeof(RankCtrl) * static_cast<std::size_t>(ranks);
}

// The data area starts on a page boundary.
std::size_t DataOffset(int ranks) { return (HeaderBytes(ranks) + 4095) / 4096 * 4096; }

void* Map(int fd, std::size_t bytes, const char* op, const std::string& subject) {
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) throw Error(op, subject, std::string("mmap: ") + std::strerror(errno));
  return base;
}

}  // namespace

std::size_t SegmentBytes(int ranks, std::size_t slot_bytes) {
  return DataOffset(ranks) + 2 * static_cast<std::size_t>(ranks) * slot_bytes;
}

ShmSegment::ShmSegment(UniqueFd fd, void* base, std::size_t bytes)
    : fd_(std::move(fd)), base_(base), bytes_(bytes) {}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : fd_(std::move(other.fd_)),
      base_(std::exchange(other.base_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

ShmSegment::~ShmSegment() {
  if (base_ != nullptr) ::munmap(base_, bytes_);
}

ShmSegment ShmSegment::Create(std::size_t bytes) {
  const std::string subject = std::to_string(bytes) + " bytes";
  UniqueFd fd(static_cast<int>(::syscall(SYS_memfd_create, "accel-shm", MFD_CLOEXEC)));
  if (!fd)
    throw Error("create shared memory", subject,
                std::string("memfd_create: ") + std::strerror(errno));
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    throw Error("create shared memory", subject, std::string("ftruncate: ") + std::strerror(errno));
  }
  void* base = Map(fd.get(), bytes, "create shared memory", subject);
  return ShmSegment(std::move(fd), base, bytes);
}

ShmSegment ShmSegment::Open(pid_t pid, int fd, std::size_t bytes) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  UniqueFd own(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!own) {
    throw Error(
        "open shared memory", path,
        std::string(std::strerror(errno)) +
            (errno == ENOENT ? " (the leader exited)" : " (set ACCEL_SHM=off to use gloo)"));
  }
  struct stat st {};
  if (::fstat(own.get(), &st) != 0 || static_cast<std::size_t>(st.st_size) < bytes) {
    throw Error("open shared memory", path, "segment is smaller than announced");
  }
  void* base = Map(own.get(), bytes, "open shared memory", path);
  own.reset();  // the mapping keeps the memory; no descriptor is needed any more
  return ShmSegment(UniqueFd(), base, bytes);
}

RankCtrl* ShmSegment::ctrl(int local_rank) const {
  auto* first = reinterpret_cast<RankCtrl*>(static_cast<std::uint8_t*>(base_) + sizeof(Header));
  return first + local_rank;
}

std::uint8_t* ShmSegment::slot(int buffer, int local_rank) const {
  const Header* h = header();
  const std::size_t index = static_cast<std::size_t>(buffer) * h->ranks + local_rank;
  return static_cast<std::uint8_t*>(base_) + DataOffset(static_cast<int>(h->ranks)) +
         index * h->slot_bytes;
}

}  // namespace accel::worker::shm
