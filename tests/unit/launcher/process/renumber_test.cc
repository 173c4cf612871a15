// Unit tests of relabeling a machine's workers after an in-place membership change (elastic
// in-place recovery): OutputRouter::Renumber and HangDetector::Renumber, over a generated set of
// leave patterns. Four machines of 2, 1, 3 and 2 workers (uneven, so a machine's old and new
// ranks overlap); machines 1..3 leave one at a time in every order and every prefix of it; each
// surviving machine's workers are renumbered as the survivors' ranks say (the reference: dense,
// in machine order, rank = base + local rank), and their prefixes, stderr tails, byte counts and
// hang-detection state must follow, generation by generation. Pipes only; no processes.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/process/hang.h"
#include "launcher/process/output.h"
#include "launcher/process/subprocess.h"
#include "tests/testing/pipes.h"

namespace accel::launcher {
namespace {

constexpr int kSizes[] = {2, 1, 3, 2};  // workers per machine
constexpr int kMachines = 4;

// The reference: machine m's first rank among `members` (dense, in machine order).
int BaseRank(const std::vector<int>& members, int m) {
  int base = 0;
  for (int other : members) {
    if (other < m) base += kSizes[other];
  }
  return base;
}

// Every order in which a non-empty subset of machines 1..3 can leave, one at a time.
std::vector<std::vector<int>> LeaveSequences() {
  std::vector<std::vector<int>> out;
  std::vector<int> all = {1, 2, 3};
  do {
    for (std::size_t n = 1; n <= all.size(); ++n) {
      std::vector<int> seq(all.begin(), all.begin() + static_cast<long>(n));
      if (std::find(out.begin(), out.end(), seq) == out.end()) out.push_back(seq);
    }
  } while (std::next_permutation(all.begin(), all.end()));
  return out;
}

using accel::testing::Drain;

void Write(const UniqueFd& fd, const std::string& text) {
  ASSERT_EQ(::write(fd.get(), text.data(), text.size()), static_cast<ssize_t>(text.size()));
}

TEST(RenumberTest, OutputAndHangStateFollowEveryLeavePattern) {
  const std::vector<std::vector<int>> sequences = LeaveSequences();
  ASSERT_EQ(sequences.size(), 15u);  // 3 + 6 + 6
  int checked = 0;
  for (const std::vector<int>& leaving : sequences) {
    for (int m = 0; m < kMachines; ++m) {
      if (std::find(leaving.begin(), leaving.end(), m) != leaving.end()) continue;
      SCOPED_TRACE(
          absl::StrCat("machine ", m, ", leaving ", leaving.size(), " first ", leaving.front()));
      auto out = MakePipe();
      auto err = MakePipe();
      ASSERT_TRUE(out.ok() && err.ok());
      ::fcntl(out->second.get(), F_SETPIPE_SZ, 1 << 20);
      ::fcntl(err->second.get(), F_SETPIPE_SZ, 1 << 20);
      OutputOptions options;
      options.console_stdout = out->second.get();
      options.console_stderr = err->second.get();
      OutputRouter router(options);
      std::map<pid_t, ProcessTreeSample> trees;
      HangDetector detector(m, "host", [&trees](pid_t pid) { return trees[pid]; });
      std::vector<int> members = {0, 1, 2, 3};
      std::vector<int> ranks;  // by local rank, as the launcher labels them now
      std::vector<WorkerPipes> pipes;
      const absl::Time start = absl::UnixEpoch() + absl::Hours(1);
      for (int local = 0; local < kSizes[m]; ++local) {
        ranks.push_back(BaseRank(members, m) + local);
        auto p = router.AddWorker(ranks.back());
        ASSERT_TRUE(p.ok());
        pipes.push_back(*std::move(p));
        const pid_t pid = 1000 + local;
        trees[pid] = ProcessTreeSample{true, local == 0, 0, 0};  // local rank 0 is stopped
        detector.Watch(ranks.back(), pid, "", start - absl::Seconds(local));
      }
      std::vector<std::uint64_t> bytes(static_cast<std::size_t>(kSizes[m]), 0);  // by local rank
      std::vector<std::string> want_out;
      for (std::size_t g = 0; g <= leaving.size(); ++g) {
        if (g > 0) {  // machine leaving[g - 1] left: generation g
          members.erase(std::find(members.begin(), members.end(), leaving[g - 1]));
          std::map<int, int> renumbered;
          for (int local = 0; local < kSizes[m]; ++local) {
            renumbered[ranks[local]] = BaseRank(members, m) + local;
            ranks[local] = BaseRank(members, m) + local;
          }
          router.Renumber(renumbered);
          detector.Renumber(renumbered);
        }
        for (int local = 0; local < kSizes[m]; ++local) {
          const std::string line = absl::StrCat("gen ", g, " local ", local);
          Write(pipes[local].stdout_write, line + "\n");
          Write(pipes[local].stderr_write, line + "\n");
          bytes[local] += 2 * (line.size() + 1);  // stdout and stderr
          want_out.push_back(absl::StrCat("[rank ", ranks[local], "] ", line, "\n"));
        }
      }
      for (WorkerPipes& p : pipes) {
        p.stdout_write.reset();
        p.stderr_write.reset();
      }
      for (int i = 0; i < 100 && !router.AllClosed(); ++i) {
        std::vector<pollfd> fds;
        router.AppendPollFds(&fds);
        ASSERT_GT(::poll(fds.data(), fds.size(), 1000), 0);
        for (const pollfd& p : fds) {
          if (p.revents != 0) router.OnReadable(p.fd);
        }
      }
      const std::string console = Drain(out->first.get());
      const std::string console_err = Drain(err->first.get());
      for (const std::string& line : want_out) {
        EXPECT_THAT(console, ::testing::HasSubstr(line));
        EXPECT_THAT(console_err, ::testing::HasSubstr(line));
      }
      std::size_t want_size = 0;
      for (const std::string& line : want_out) want_size += line.size();
      EXPECT_EQ(console.size(), want_size);  // nothing else, no line twice
      detector.Sample(start, [](int) { return std::uint64_t{0}; });
      const std::vector<RankSnapshot> snapshots = detector.Snapshots(start);
      ASSERT_EQ(snapshots.size(), static_cast<std::size_t>(kSizes[m]));
      for (int local = 0; local < kSizes[m]; ++local) {
        EXPECT_EQ(router.BytesFrom(ranks[local]), bytes[local]);
        EXPECT_EQ(router.StderrTail(ranks[local]).size(), leaving.size() + 1);
        const RankSnapshot& s = snapshots[static_cast<std::size_t>(local)];  // ordered by rank
        EXPECT_EQ(s.rank, ranks[local]);
        EXPECT_EQ(s.stopped, local == 0);
        EXPECT_EQ(s.idle_for, absl::Seconds(local));  // kept from its first Watch
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 15 * 4 - (3 + 2 * 6 + 3 * 6));  // survivors over every sequence
}

}  // namespace
}  // namespace accel::launcher
