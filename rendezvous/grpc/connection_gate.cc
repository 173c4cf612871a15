#include "rendezvous/grpc/connection_gate.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace accel::rendezvous {
namespace {

// The source address of a peer, without its port; an IPv4-mapped IPv6 address as IPv4.
std::string SourceOf(const sockaddr_storage& addr, bool* loopback) {
  char text[INET6_ADDRSTRLEN] = {};
  *loopback = false;
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    *loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
    return text;
  }
  if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
      in_addr v4{};
      std::memcpy(&v4, &a->sin6_addr.s6_addr[12], sizeof(v4));
      *loopback = (ntohl(v4.s_addr) >> 24) == 127;
      ::inet_ntop(AF_INET, &v4, text, sizeof(text));
      return text;
    }
    *loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
    return text;
  }
  return "?";
}

// Closes a refused connection with a reset: nothing lingers in TIME_WAIT on this side.
void Refuse(int fd) {
  const linger reset{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  ::close(fd);
}

UniqueFd ListenOn(const sockaddr* addr, socklen_t len, bool dual_stack) {
  UniqueFd fd(::socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return fd;
  const int on = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (addr->sa_family == AF_INET6) {
    const int v6only = dual_stack ? 0 : 1;
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
  }
  if (::bind(fd.get(), addr, len) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) fd.reset();
  return fd;
}

bool IsWildcard(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "*";
}

}  // namespace

bool PendingConnections::Admit(int fd, const std::string& source, bool loopback, absl::Time now) {
  if (loopback && !limits_.count_loopback) return true;
  Expire(now, /*closed=*/false);
  auto over = [&] {
    auto it = per_source_.find(source);
    return total_ >= limits_.total || (it != per_source_.end() && it->second >= limits_.per_source);
  };
  if (over()) {
    Expire(now, /*closed=*/true);
    if (over()) return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) return false;
  entries_.push_back(Entry{fd, st.st_dev, st.st_ino, source, now});
  ++per_source_[source];
  ++total_;
  return true;
}

int PendingConnections::pending_from(const std::string& source) const {
  auto it = per_source_.find(source);
  return it == per_source_.end() ? 0 : it->second;
}

void PendingConnections::Forget(const Entry& e) {
  auto it = per_source_.find(e.source);
  if (--it->second == 0) per_source_.erase(it);
  --total_;
}

void PendingConnections::Expire(absl::Time now, bool closed) {
  while (!entries_.empty() && now - entries_.front().accepted >= limits_.window) {
    Forget(entries_.front());
    entries_.pop_front();
  }
  if (!closed || now - last_sweep_ < absl::Milliseconds(50)) return;
  last_sweep_ = now;
  std::deque<Entry> open;
  for (Entry& e : entries_) {
    struct stat st {};
    if (::fstat(e.fd, &st) == 0 && st.st_dev == e.dev && st.st_ino == e.ino) {
      open.push_back(std::move(e));
    } else {
      Forget(e);
    }
  }
  entries_ = std::move(open);
}

absl::StatusOr<std::unique_ptr<ConnectionGate>> ConnectionGate::Listen(const std::string& host,
                                                                       int port,
                                                                       GateLimits limits) {
  UniqueFd fd;
  if (IsWildcard(host)) {
    sockaddr_in6 v6{};
    v6.sin6_family = AF_INET6;
    v6.sin6_addr = in6addr_any;
    v6.sin6_port = htons(static_cast<std::uint16_t>(port));
    fd = ListenOn(reinterpret_cast<sockaddr*>(&v6), sizeof(v6), /*dual_stack=*/true);
    if (!fd) {
      sockaddr_in v4{};
      v4.sin_family = AF_INET;
      v4.sin_addr.s_addr = htonl(INADDR_ANY);
      v4.sin_port = htons(static_cast<std::uint16_t>(port));
      fd = ListenOn(reinterpret_cast<sockaddr*>(&v4), sizeof(v4), false);
    }
  } else {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot resolve \"", host, "\": ", ::gai_strerror(rc)));
    }
    // IPv4 first: a name such as localhost is most often reached by its IPv4 address.
    std::vector<const addrinfo*> order;
    for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
      if (a->ai_family == AF_INET) order.push_back(a);
    }
    for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
      if (a->ai_family == AF_INET6) order.push_back(a);
    }
    for (const addrinfo* a : order) {
      fd = ListenOn(a->ai_addr, a->ai_addrlen, false);
      if (fd) break;
    }
    ::freeaddrinfo(found);
  }
  if (!fd) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot listen on ", host, ":", port));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return absl::ErrnoToStatus(errno, "getsockname");
  }
  const int bound = addr.ss_family == AF_INET6
                        ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                        : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return std::unique_ptr<ConnectionGate>(new ConnectionGate(std::move(fd), bound, limits));
}

ConnectionGate::ConnectionGate(UniqueFd listener, int port, GateLimits limits)
    : listener_(std::move(listener)),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      port_(port),
      pending_(limits) {}

ConnectionGate::~ConnectionGate() { Stop(); }

void ConnectionGate::Start(std::function<void(int fd)> hand_off) {
  hand_off_ = std::move(hand_off);
  thread_ = std::thread([this] { Run(); });
}

void ConnectionGate::Stop() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    (void)!::write(wake_fd_.get(), &one, sizeof(one));
    thread_.join();
    if (refused_.load() > 0) {
      spdlog::info("rendezvous: refused {} connections in all (too many in their TLS handshake)",
                   refused_.load());
    }
  }
  listener_.reset();
}

void ConnectionGate::Run() {
  bool logged = false;
  while (true) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {wake_fd_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    while (true) {
      sockaddr_storage addr{};
      socklen_t len = sizeof(addr);
      const int fd = ::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len,
                               SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          ::usleep(10000);  // out of descriptors: let gRPC close some
        }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        break;  // EAGAIN: nothing waits
      }
      bool loopback = false;
      const std::string source = SourceOf(addr, &loopback);
      if (!pending_.Admit(fd, source, loopback, absl::Now())) {
        refused_.fetch_add(1);
        Refuse(fd);
        if (!logged) {
          logged = true;
          spdlog::warn(
              "rendezvous: refusing connections from {}: too many still in their TLS handshake "
              "(a flood from a stranger?); said once",
              source);
        }
        continue;
      }
      const int on = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
      hand_off_(fd);
    }
  }
}

}  // namespace accel::rendezvous
