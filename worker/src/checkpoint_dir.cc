#include "worker/src/checkpoint_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <random>
#include <system_error>

namespace accel::worker {
namespace {

namespace fs = std::filesystem;

std::string ClaimName(std::uint64_t nonce) { return ".writer." + std::to_string(nonce); }

}  // namespace

bool ClaimWriter(const CheckpointPaths& paths, std::uint64_t nonce) {
  fs::create_directories(paths.tmp);  // several processes may race here: EEXIST is fine
  const fs::path claim = paths.tmp / ClaimName(nonce);
  const int fd = ::open(claim.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ::close(fd);
    return true;
  }
  if (errno == EEXIST) return false;
  throw std::system_error(errno, std::generic_category(), "create " + claim.string());
}

void ClearStale(const CheckpointPaths& paths, std::uint64_t nonce) {
  const std::string keep = ClaimName(nonce);
  for (const fs::directory_entry& entry : fs::directory_iterator(paths.tmp)) {
    if (entry.path().filename() != keep) fs::remove_all(entry.path());
  }
}

void DropClaim(const CheckpointPaths& paths, std::uint64_t nonce) {
  fs::remove(paths.tmp / ClaimName(nonce));
}

void Sync(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "open " + path.string());
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw std::system_error(err, std::generic_category(), "fsync " + path.string());
}

void Promote(const CheckpointPaths& paths) {
  Sync(paths.tmp);  // the names of every rank's files
  if (fs::exists(paths.final_dir)) {
    fs::remove_all(paths.old);
    fs::rename(paths.final_dir, paths.old);
  }
  fs::rename(paths.tmp, paths.final_dir);
  Sync(paths.final_dir.has_parent_path() ? paths.final_dir.parent_path() : fs::path("."));
}

void DropOld(const CheckpointPaths& paths) { fs::remove_all(paths.old); }

std::vector<fs::path> CheckpointCandidates(const CheckpointPaths& paths) {
  std::vector<fs::path> found;
  for (const fs::path& dir : {paths.final_dir, paths.old}) {
    std::error_code ignored;
    if (fs::is_regular_file(dir / kCheckpointMeta, ignored)) found.push_back(dir);
  }
  return found;
}

std::uint64_t RandomNonce() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

}  // namespace accel::worker
