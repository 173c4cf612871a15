#include "worker/src/checkpoint_dir.h"

#include <fcntl.h>
#include <ftw.h>
#include <unistd.h>

#include <cerrno>
#include <random>
#include <system_error>

namespace accel::worker {
namespace {

namespace fs = std::filesystem;

std::string ClaimName(std::uint64_t nonce) { return ".writer." + std::to_string(nonce); }

int RemoveEntry(const char* path, const struct stat*, int type, struct FTW*) {
  const int rc = type == FTW_DP ? ::rmdir(path) : ::unlink(path);
  return rc == 0 || errno == ENOENT ? 0 : errno;
}

// Removes `path` and everything under it (nothing when it does not exist), without symlinks
// followed. Not std::filesystem::remove_all: against the pip wheel's libtorch 2.11 a call of it
// from a program linked with LibTorch went to a copy inside libtorch.so and crashed (SIGSEGV at
// address 0 on an H200 machine, 2026-12-04), and a checkpoint's rotation removes a directory
// at every save.
void RemoveTree(const fs::path& path) {
  const int rc = ::nftw(path.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
  if (rc == 0 || (rc == -1 && errno == ENOENT)) return;
  throw std::system_error(rc > 0 ? rc : errno, std::generic_category(), "remove " + path.string());
}

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
    if (entry.path().filename() != keep) RemoveTree(entry.path());
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
    RemoveTree(paths.old);
    fs::rename(paths.final_dir, paths.old);
  }
  fs::rename(paths.tmp, paths.final_dir);
  Sync(paths.final_dir.has_parent_path() ? paths.final_dir.parent_path() : fs::path("."));
}

void DropOld(const CheckpointPaths& paths) { RemoveTree(paths.old); }

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
