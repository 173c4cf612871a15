// The directory side of save_state / load_state (std::filesystem only, no LibTorch): who writes a
// checkpoint's shared files, how "<dir>.tmp" becomes "<dir>", and which directories hold one.
//
// A save writes "<dir>.tmp", then Promote makes it "<dir>" and DropOld removes "<dir>.old". At
// every moment "<dir>" or "<dir>.old" holds a complete checkpoint (the newer one in "<dir>" when
// both do), so a crash anywhere loses at most the save in progress, never the last good state.
//
// Several machines may share one directory or each have their own: ClaimWriter elects exactly
// one writer per distinct directory (O_EXCL on a file named by a nonce every rank agrees on).
// Errors are std::filesystem_error (or std::system_error); state_io turns them into accel::Error.
#ifndef ACCEL_WORKER_SRC_CHECKPOINT_DIR_H_
#define ACCEL_WORKER_SRC_CHECKPOINT_DIR_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace accel::worker {

struct CheckpointPaths {
  explicit CheckpointPaths(const std::string& dir)
      : final_dir(dir), tmp(dir + ".tmp"), old(dir + ".old") {}
  std::filesystem::path final_dir;  // the checkpoint
  std::filesystem::path tmp;        // the save in progress
  std::filesystem::path old;        // the previous checkpoint while "<dir>" is replaced
};

// The file every complete checkpoint directory holds (written last by its writer).
inline constexpr char kCheckpointMeta[] = "accelerator.pt";

// Creates `tmp` if missing and tries to create "<tmp>/.writer.<nonce>" exclusively. Returns true
// for the one caller per distinct directory that made it: that caller writes the shared files.
// Every local main process calls it once per save with the same `nonce`.
bool ClaimWriter(const CheckpointPaths& paths, std::uint64_t nonce);

// Removes everything in `tmp` but this save's claim: files a crashed save left there. Writer only,
// before anyone writes into `tmp`.
void ClearStale(const CheckpointPaths& paths, std::uint64_t nonce);

// Removes this save's claim from `tmp` (once every writer is elected), so that it does not end
// up in the checkpoint.
void DropClaim(const CheckpointPaths& paths, std::uint64_t nonce);

// Flushes `path` (a file or a directory) to stable storage.
void Sync(const std::filesystem::path& path);

// Makes the complete `tmp` the checkpoint: when "<dir>" exists it becomes "<dir>.old" (any
// earlier "<dir>.old" is removed first: "<dir>" is newer and complete); then `tmp` becomes
// "<dir>". A missing "<dir>" leaves "<dir>.old" alone: it is the last good checkpoint. Writer only.
void Promote(const CheckpointPaths& paths);

// Removes "<dir>.old" (after every directory has been promoted). Writer only.
void DropOld(const CheckpointPaths& paths);

// Returns "<dir>" and "<dir>.old" when they hold kCheckpointMeta, newest first.
std::vector<std::filesystem::path> CheckpointCandidates(const CheckpointPaths& paths);

// Returns a random nonce (std::random_device).
std::uint64_t RandomNonce();

}  // namespace accel::worker

#endif  // ACCEL_WORKER_SRC_CHECKPOINT_DIR_H_
