// Output: every worker's stdout and stderr arrive through pipes and leave as whole lines.
//
// Console lines are prefixed "[rank r] " and written with one write() per batch of complete
// lines by the single thread that owns the router, so lines never interleave mid-line (and above
// the live status line, common/live_line.h, when one is shown). With a
// log directory each stream is also copied byte for byte to
// <attempt_dir>/rank_<r>/{stdout,stderr}.log, made private (dir_mode, log_file_mode) and never
// through a symlink or into a file someone else made (common/safe_file.h). The last lines of each
// stderr are kept for the failure report. With a dedup window, console lines that several ranks
// print alike are printed once with the set of ranks (launcher/process/line_dedup.h); the log
// files still get every byte. Not thread-safe: owned by the supervisor's event loop.
#ifndef ACCEL_LAUNCHER_PROCESS_OUTPUT_H_
#define ACCEL_LAUNCHER_PROCESS_OUTPUT_H_

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/unique_fd.h"
#include "launcher/process/line_dedup.h"

namespace accel::launcher {

struct OutputOptions {
  std::string attempt_dir;        // "" = no log files; else <log_dir>/<run_id>/attempt_<k>
  bool console = true;            // print worker lines on the launcher's console
  std::vector<int> ranks_filter;  // empty = every rank on the console
  int console_stdout = 1;         // where worker stdout lines go
  int console_stderr = 2;         // where worker stderr lines go
  std::size_t tail_lines = 20;    // stderr lines kept per rank for the report
  mode_t dir_mode = 0700;         // rank directories (log_mode: launcher/status/run_dir.h)
  mode_t log_file_mode = 0600;    // the log files, created new (O_EXCL | O_NOFOLLOW)
  // Identical console lines from several ranks within this window are printed once ("[ranks
  // 0-7] ..."); zero = every line of every rank as it comes.
  absl::Duration dedup_window = absl::ZeroDuration();
};

// The child's ends of one worker's pipes; close them after Spawn.
struct WorkerPipes {
  UniqueFd stdout_write;
  UniqueFd stderr_write;
};

class OutputRouter {
 public:
  explicit OutputRouter(OutputOptions options)
      : options_(std::move(options)),
        dedup_{LineDedup(options_.dedup_window), LineDedup(options_.dedup_window)} {}
  ~OutputRouter() { FlushHeld(absl::InfiniteFuture()); }
  OutputRouter(const OutputRouter&) = delete;
  OutputRouter& operator=(const OutputRouter&) = delete;

  // Creates the pipes (and log files) of global rank `rank`.
  absl::StatusOr<WorkerPipes> AddWorker(int rank);

  // Appends a POLLIN entry for every pipe still open.
  void AppendPollFds(std::vector<pollfd>* fds) const;
  // Returns true when `fd` is one of the router's pipes.
  bool Owns(int fd) const { return streams_.count(fd) != 0; }
  // Reads what `fd` has (never blocks); at end of file flushes its last partial line and closes.
  void OnReadable(int fd);
  // Returns true when every pipe reached end of file.
  bool AllClosed() const { return streams_.empty(); }
  // Flushes partial lines and closes every pipe (used when a drain deadline runs out).
  void CloseAll();
  // Prints the held (de-duplicated) console lines due by `now` (InfiniteFuture: all of them).
  void FlushHeld(absl::Time now);
  // When the oldest held console line is due (InfiniteFuture: none is held).
  absl::Time NextFlush() const;

  // Relabels the workers' streams, stderr tails and byte counts: rank `old` is `renumbered[old]`
  // from now on (an in-place membership change; ranks not named keep theirs). What the pipes hold
  // now is read first, under the old labels; a line not yet complete gets the new one. The log
  // files stay where they are (rank_<rank at start>).
  void Renumber(const std::map<int, int>& renumbered);

  // Returns the last stderr lines of `rank` (oldest first).
  std::vector<std::string> StderrTail(int rank) const;
  // Returns how many bytes `rank` has written to stdout and stderr together.
  std::uint64_t BytesFrom(int rank) const;

 private:
  struct Stream {
    int rank = 0;
    bool is_stderr = false;
    bool console = true;
    UniqueFd read_fd;
    UniqueFd log_fd;
    std::string partial;  // bytes after the last newline
  };

  void Emit(Stream& stream, const char* data, std::size_t size, bool flush_partial);
  void WriteConsole(bool is_stderr, const std::string& text) const;
  void KeepTail(int rank, absl::string_view line);

  OutputOptions options_;
  std::map<int, std::unique_ptr<Stream>> streams_;  // by read fd
  std::map<int, std::deque<std::string>> tails_;    // by rank
  std::map<int, std::uint64_t> bytes_;              // by rank
  LineDedup dedup_[2];                              // console stdout, stderr
  int console_ranks_ = 0;
};

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_PROCESS_OUTPUT_H_
