#include "launcher/process/output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/live_line.h"
#include "common/safe_file.h"
#include "launcher/process/subprocess.h"

namespace accel::launcher {
namespace {

constexpr std::size_t kReadChunk = std::size_t{64} * 1024;
constexpr std::size_t kMaxLine =
    std::size_t{64} * 1024;  // longer lines are cut, so memory stays bounded
constexpr std::size_t kMaxTailLine = 1024;

void WriteAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;  // console gone or log disk full: output is best effort
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

}  // namespace

absl::StatusOr<WorkerPipes> OutputRouter::AddWorker(int rank) {
  const bool console =
      options_.console && (options_.ranks_filter.empty() ||
                           std::find(options_.ranks_filter.begin(), options_.ranks_filter.end(),
                                     rank) != options_.ranks_filter.end());
  UniqueFd rank_dir;  // the logs' directory, made private (common/safe_file.h)
  const std::string rank_path = absl::StrCat(options_.attempt_dir, "/rank_", rank);
  if (!options_.attempt_dir.empty()) {
    if (absl::Status s = MakeParentDirs(options_.attempt_dir, options_.dir_mode); !s.ok()) return s;
    absl::StatusOr<UniqueFd> attempt = OpenOwnDir(options_.attempt_dir);
    if (!attempt.ok()) return attempt.status();
    absl::StatusOr<UniqueFd> dir = MakeDirsAt(attempt->get(), absl::StrCat("rank_", rank),
                                              options_.dir_mode, options_.attempt_dir);
    if (!dir.ok()) return dir.status();
    rank_dir = *std::move(dir);
  }
  if (console) {
    ++console_ranks_;
    for (LineDedup& dedup : dedup_) dedup.SetRankCount(console_ranks_);
  }
  WorkerPipes out;
  for (int i = 0; i < 2; ++i) {
    auto pipe = MakePipe();
    if (!pipe.ok()) {
      return pipe.status();
    }
    auto stream = std::make_unique<Stream>();
    stream->rank = rank;
    stream->is_stderr = i == 1;
    stream->console = console;
    stream->read_fd = std::move(pipe->first);
    ::fcntl(stream->read_fd.get(), F_SETFL, O_NONBLOCK);
    if (rank_dir.valid()) {
      const char* name = i == 0 ? "stdout.log" : "stderr.log";
      auto log = CreateFileAt(rank_dir.get(), name, O_WRONLY, options_.log_file_mode,
                              /*replace=*/true, absl::StrCat(rank_path, "/", name));
      if (!log.ok()) {
        return log.status();
      }
      stream->log_fd = *std::move(log);
    }
    (i == 0 ? out.stdout_write : out.stderr_write) = std::move(pipe->second);
    const int key = stream->read_fd.get();
    streams_[key] = std::move(stream);
  }
  return out;
}

void OutputRouter::AppendPollFds(std::vector<pollfd>* fds) const {
  for (const auto& [fd, stream] : streams_) {
    fds->push_back(pollfd{fd, POLLIN, 0});
  }
}

void OutputRouter::OnReadable(int fd) {
  auto it = streams_.find(fd);
  if (it == streams_.end()) {
    return;
  }
  Stream& stream = *it->second;
  char buffer[kReadChunk];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && errno == EAGAIN) {
      return;
    }
    if (n <= 0) {  // end of file or a broken pipe: flush and forget the stream
      Emit(stream, nullptr, 0, /*flush_partial=*/true);
      streams_.erase(it);
      if (streams_.empty()) FlushHeld(absl::InfiniteFuture());
      return;
    }
    bytes_[stream.rank] += static_cast<std::uint64_t>(n);
    Emit(stream, buffer, static_cast<std::size_t>(n), /*flush_partial=*/false);
    if (static_cast<std::size_t>(n) < sizeof(buffer)) {
      return;
    }
  }
}

void OutputRouter::Renumber(const std::map<int, int>& renumbered) {
  std::vector<int> fds;
  for (const auto& [fd, stream] : streams_) fds.push_back(fd);
  for (int fd : fds) OnReadable(fd);  // never blocks; may close streams at end of file
  FlushHeld(absl::InfiniteFuture());  // held lines keep the labels they came with
  auto relabel = [&renumbered](int rank) {
    auto it = renumbered.find(rank);
    return it == renumbered.end() ? rank : it->second;
  };
  for (auto& [fd, stream] : streams_) stream->rank = relabel(stream->rank);
  std::map<int, std::deque<std::string>> tails;
  for (auto& [rank, tail] : tails_) tails[relabel(rank)] = std::move(tail);
  tails_ = std::move(tails);
  std::map<int, std::uint64_t> bytes;
  for (const auto& [rank, count] : bytes_) bytes[relabel(rank)] = count;
  bytes_ = std::move(bytes);
}

std::uint64_t OutputRouter::BytesFrom(int rank) const {
  auto it = bytes_.find(rank);
  return it == bytes_.end() ? 0 : it->second;
}

void OutputRouter::CloseAll() {
  for (auto& [fd, stream] : streams_) {
    Emit(*stream, nullptr, 0, /*flush_partial=*/true);
  }
  streams_.clear();
  FlushHeld(absl::InfiniteFuture());
}

void OutputRouter::FlushHeld(absl::Time now) {
  for (int i = 0; i < 2; ++i) {
    if (dedup_[i].empty()) continue;
    std::string console;
    if (now == absl::InfiniteFuture()) {
      dedup_[i].FlushAll(&console);
    } else {
      dedup_[i].FlushDue(now, &console);
    }
    WriteConsole(i == 1, console);
  }
}

absl::Time OutputRouter::NextFlush() const {
  return std::min(dedup_[0].NextDue(), dedup_[1].NextDue());
}

void OutputRouter::WriteConsole(bool is_stderr, const std::string& text) const {
  if (text.empty()) return;
  const int fd = is_stderr ? options_.console_stderr : options_.console_stdout;
  WriteAboveLiveLine([&] { WriteAll(fd, text.data(), text.size()); });
}

std::vector<std::string> OutputRouter::StderrTail(int rank) const {
  auto it = tails_.find(rank);
  if (it == tails_.end()) {
    return {};
  }
  return {it->second.begin(), it->second.end()};
}

void OutputRouter::Emit(Stream& stream, const char* data, std::size_t size, bool flush_partial) {
  if (size > 0 && stream.log_fd.valid()) {
    WriteAll(stream.log_fd.get(), data, size);
  }
  stream.partial.append(data, size);
  const std::string prefix = absl::StrCat("[rank ", stream.rank, "] ");
  const bool dedup = options_.dedup_window > absl::ZeroDuration();
  const absl::Time now = dedup ? absl::Now() : absl::InfinitePast();
  std::string console;
  std::size_t start = 0;
  for (;;) {
    std::size_t end = stream.partial.find('\n', start);
    const bool cut = end == std::string::npos && stream.partial.size() - start >= kMaxLine;
    const bool last = end == std::string::npos && flush_partial && start < stream.partial.size();
    if (end == std::string::npos && !cut && !last) {
      break;
    }
    if (end == std::string::npos) {
      end = cut ? start + kMaxLine : stream.partial.size();
    }
    const absl::string_view line(stream.partial.data() + start, end - start);
    if (stream.console && dedup) {
      dedup_[stream.is_stderr ? 1 : 0].Add(stream.rank, line, now, &console);
    } else if (stream.console) {
      absl::StrAppend(&console, prefix, line, "\n");
    }
    if (stream.is_stderr) {
      KeepTail(stream.rank, line);
    }
    start = end < stream.partial.size() && stream.partial[end] == '\n' ? end + 1 : end;
  }
  stream.partial.erase(0, start);
  WriteConsole(stream.is_stderr, console);
}

void OutputRouter::KeepTail(int rank, absl::string_view line) {
  auto& tail = tails_[rank];
  tail.emplace_back(line.substr(0, kMaxTailLine));
  while (tail.size() > options_.tail_lines) {
    tail.pop_front();
  }
}

}  // namespace accel::launcher
