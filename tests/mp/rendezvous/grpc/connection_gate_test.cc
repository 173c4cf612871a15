// The connection gate (issue 24): PendingConnections' decisions against a reference over random
// sequences of accepts, closes and time (real descriptors: socketpairs, closed and reused as gRPC
// would), and the gate itself on 127.0.0.1 (loopback counted): beyond the cap a connection is
// reset at once, a closed connection frees its slot, and an old one stops counting.
#include "rendezvous/grpc/connection_gate.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace accel::rendezvous {
namespace {

struct Conn {
  int fd;
  int peer;
  std::string source;
  absl::Time accepted;
  bool open;
};

TEST(PendingConnectionsTest, AdmitsExactlyWhatTheReferenceAdmits) {
  const std::vector<std::string> sources = {"10.0.0.1", "10.0.0.2", "10.0.0.3", "127.0.0.1"};
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    const GateLimits limits{static_cast<int>(1 + rng() % 5), static_cast<int>(2 + rng() % 8),
                            absl::Seconds(1 + rng() % 3), false};
    PendingConnections pending(limits);
    std::vector<Conn> conns;
    absl::Time now = absl::FromUnixSeconds(1000);
    for (int step = 0; step < 300; ++step) {
      now += absl::Milliseconds(50 + rng() % 400);  // >= the sweep interval: closes are seen
      const unsigned op = rng() % 10;
      if (op < 3) {  // gRPC closes one (its number may be reused by the next accept)
        std::vector<Conn*> open;
        for (Conn& c : conns) {
          if (c.open) open.push_back(&c);
        }
        if (!open.empty()) {
          Conn* c = open[rng() % open.size()];
          ::close(c->fd);
          ::close(c->peer);
          c->open = false;
        }
        continue;
      }
      const std::string& source = sources[rng() % sources.size()];
      const bool loopback = source == "127.0.0.1";
      int young_total = 0;
      int young_source = 0;
      for (const Conn& c : conns) {
        if (!c.open || now - c.accepted >= limits.window) continue;
        ++young_total;
        if (c.source == source) ++young_source;
      }
      const bool expected =
          loopback || (young_total < limits.total && young_source < limits.per_source);
      int pair[2];
      ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
      const bool admitted = pending.Admit(pair[0], source, loopback, now);
      ASSERT_EQ(admitted, expected) << "seed " << seed << " step " << step << " source " << source
                                    << " young " << young_source << "/" << young_total;
      if (admitted && !loopback) {
        conns.push_back({pair[0], pair[1], source, now, true});
      } else {
        ::close(pair[0]);
        ::close(pair[1]);
      }
    }
    for (Conn& c : conns) {
      if (c.open) {
        ::close(c.fd);
        ::close(c.peer);
      }
    }
  }
}

// Connects to 127.0.0.1:port; returns the descriptor.
int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

// True when the server reset or closed `fd` within `wait`.
bool ClosedByServer(int fd, absl::Duration wait) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(wait))) <= 0) return false;
  char byte;
  return ::recv(fd, &byte, 1, MSG_DONTWAIT) <= 0;
}

class Holder {
 public:
  void Take(int fd) {
    absl::MutexLock lock(&mu_);
    fds_.push_back(fd);
  }
  std::size_t Count() {
    absl::MutexLock lock(&mu_);
    return fds_.size();
  }
  void CloseOne() {
    absl::MutexLock lock(&mu_);
    ::close(fds_.back());
    fds_.pop_back();
  }
  ~Holder() {
    for (int fd : fds_) ::close(fd);
  }

 private:
  absl::Mutex mu_;
  std::vector<int> fds_;
};

TEST(ConnectionGateTest, RefusesBeyondTheCapAndFreesClosedAndOldSlots) {
  Holder held;
  auto gate = ConnectionGate::Listen("127.0.0.1", 0, GateLimits{3, 100, absl::Seconds(2), true});
  ASSERT_TRUE(gate.ok()) << gate.status();
  (*gate)->Start([&held](int fd) { held.Take(fd); });
  std::vector<int> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(Connect((*gate)->port()));
  for (int fd : clients) EXPECT_FALSE(ClosedByServer(fd, absl::Milliseconds(100)));
  const int fourth = Connect((*gate)->port());
  EXPECT_TRUE(ClosedByServer(fourth, absl::Seconds(2))) << "beyond the cap: reset at once";
  EXPECT_EQ(held.Count(), 3u);
  EXPECT_EQ((*gate)->refused(), 1);

  held.CloseOne();  // what gRPC does with a refused handshake
  ::usleep(60000);  // closes are looked for at most every 50 ms
  const int fifth = Connect((*gate)->port());
  EXPECT_FALSE(ClosedByServer(fifth, absl::Milliseconds(200))) << "a closed slot is free again";
  EXPECT_EQ(held.Count(), 3u);

  ::usleep(2100000);  // past the window: the open ones (authenticated, as it were) stop counting
  std::vector<int> later;
  for (int i = 0; i < 3; ++i) later.push_back(Connect((*gate)->port()));
  for (int fd : later) EXPECT_FALSE(ClosedByServer(fd, absl::Milliseconds(100)));
  EXPECT_EQ(held.Count(), 6u);
  (*gate)->Stop();
  for (int fd : clients) ::close(fd);
  for (int fd : later) ::close(fd);
  ::close(fourth);
  ::close(fifth);
}

TEST(ConnectionGateTest, LoopbackIsNotCountedByDefault) {
  Holder held;
  auto gate = ConnectionGate::Listen("127.0.0.1", 0, GateLimits{2, 2, absl::Seconds(10), false});
  ASSERT_TRUE(gate.ok()) << gate.status();
  (*gate)->Start([&held](int fd) { held.Take(fd); });
  std::vector<int> clients;
  for (int i = 0; i < 20; ++i) clients.push_back(Connect((*gate)->port()));
  for (int fd : clients) EXPECT_FALSE(ClosedByServer(fd, absl::Milliseconds(20)));
  (*gate)->Stop();
  EXPECT_EQ(held.Count(), 20u);
  EXPECT_EQ((*gate)->refused(), 0);
  for (int fd : clients) ::close(fd);
}

}  // namespace
}  // namespace accel::rendezvous
