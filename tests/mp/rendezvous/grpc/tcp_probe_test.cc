// TcpProber and ProbeListener with real sockets on 127.0.0.1: a listener answers (however busy
// its owner: nobody accepts), a closed port and a full accept queue (SYNs dropped, as on a link
// that is down) do not, attempts are paced, and Drain keeps the queue from filling.
#include "rendezvous/grpc/tcp_probe.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <vector>

#include "absl/synchronization/mutex.h"

namespace accel::rendezvous {
namespace {

struct Seen {
  absl::Time started;
  bool answered;
  absl::Time now;
};

class Recorder {
 public:
  TcpProber::OnResult Callback() {
    return [this](int key, absl::Time started, bool answered, absl::Time now) {
      absl::MutexLock lock(&mu_);
      seen_[key].push_back({started, answered, now});
    };
  }
  // Waits until key has `count` results (up to 10 s); returns them.
  std::vector<Seen> Await(int key, std::size_t count) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return seen_[key].size() >= count; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
    return seen_[key];
  }

 private:
  absl::Mutex mu_;
  std::map<int, std::vector<Seen>> seen_ ABSL_GUARDED_BY(mu_);
};

// Returns a loopback listener with backlog 0 whose queue is full: the kernel drops new SYNs.
UniqueFd FullListener(int* port, std::vector<UniqueFd>* fillers) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(::listen(fd.get(), 0), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  for (int i = 0; i < 2; ++i) {
    fillers->emplace_back(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    ::connect(fillers->back().get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  }
  absl::SleepFor(absl::Milliseconds(50));
  return fd;
}

TEST(TcpProbeTest, AListenerNobodyServesAnswersAndAttemptsArePaced) {
  absl::StatusOr<ProbeListener> listener = ProbeListener::Open();
  ASSERT_TRUE(listener.ok()) << listener.status();
  Recorder recorder;
  TcpProber prober(recorder.Callback(), absl::Milliseconds(200));
  const absl::Time begin = absl::Now();
  prober.SetTargets({{7, "127.0.0.1", listener->port()}});
  const std::vector<Seen> seen = recorder.Await(7, 4);
  ASSERT_GE(seen.size(), 4u);
  for (const Seen& s : seen) EXPECT_TRUE(s.answered);
  // One attempt per 200 ms: the 4th begins no earlier than 600 ms after the first.
  EXPECT_GE(seen[3].started - seen[0].started, absl::Milliseconds(590));
  EXPECT_LT(seen[0].now - begin, absl::Milliseconds(500));
  listener->Drain();
}

TEST(TcpProbeTest, AClosedPortAndADroppedSynAreNotAnswers) {
  Recorder recorder;
  TcpProber prober(recorder.Callback(), absl::Milliseconds(300));
  int closed_port = 0;
  {
    absl::StatusOr<ProbeListener> gone = ProbeListener::Open();
    ASSERT_TRUE(gone.ok());
    closed_port = gone->port();
  }
  int full_port = 0;
  std::vector<UniqueFd> fillers;
  UniqueFd full = FullListener(&full_port, &fillers);
  prober.SetTargets({{1, "127.0.0.1", closed_port}, {2, "127.0.0.1", full_port}});
  for (int key : {1, 2}) {
    const std::vector<Seen> seen = recorder.Await(key, 2);
    ASSERT_GE(seen.size(), 2u) << key;
    for (const Seen& s : seen) EXPECT_FALSE(s.answered) << key;
    if (key == 2) {  // nothing answered: the attempt ran to its timeout
      EXPECT_GE(seen[0].now - seen[0].started, absl::Milliseconds(290));
    }
  }
  prober.SetTargets({});
}

TEST(TcpProbeTest, DrainKeepsTheListenerAnswering) {
  absl::StatusOr<ProbeListener> listener = ProbeListener::Open();
  ASSERT_TRUE(listener.ok());
  Recorder recorder;
  TcpProber prober(recorder.Callback(), absl::Milliseconds(1));
  prober.SetTargets({{3, "127.0.0.1", listener->port()}});
  for (std::size_t n = 50; n <= 300; n += 50) {
    const std::vector<Seen> seen = recorder.Await(3, n);
    ASSERT_GE(seen.size(), n);
    EXPECT_TRUE(seen[n - 1].answered) << n;
    listener->Drain();
  }
}

}  // namespace
}  // namespace accel::rendezvous
