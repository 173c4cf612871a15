#include "rendezvous/grpc/tcp_probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace accel::rendezvous {
namespace {

absl::Status Errno(const char* what) {
  return absl::UnavailableError(absl::StrCat("open probe listener: ", what, ": ", strerror(errno)));
}

// Returns a listening socket on `family`'s wildcard address, or an invalid fd.
UniqueFd ListenOn(int family) {
  UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return fd;
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (family == AF_INET6) {
    const int off = 0;  // IPv4 too, as mapped addresses
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_any;
    len = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_ANY);
    len = sizeof(*a);
  }
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(fd.get(), 64) != 0) {
    fd.reset();
  }
  return fd;
}

// Resets `fd`'s connection on close: nothing lingers in TIME_WAIT on either side.
void CloseWithReset(UniqueFd& fd) {
  const linger reset{1, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  fd.reset();
}

}  // namespace

absl::StatusOr<ProbeListener> ProbeListener::Open() {
  UniqueFd fd = ListenOn(AF_INET6);
  if (!fd) fd = ListenOn(AF_INET);
  if (!fd) return Errno("listen");
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Errno("getsockname");
  }
  const int port = addr.ss_family == AF_INET6
                       ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                       : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return ProbeListener(std::move(fd), port);
}

void ProbeListener::Drain() const {
  while (true) {
    UniqueFd conn(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!conn && errno != ECONNABORTED && errno != EINTR) return;  // EAGAIN: nothing waits
  }
}

TcpProber::TcpProber(OnResult on_result, absl::Duration attempt_timeout)
    : on_result_(std::move(on_result)),
      attempt_timeout_(attempt_timeout),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  thread_ = std::thread([this] { Run(); });
}

TcpProber::~TcpProber() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_.get(), &one, sizeof(one));
  thread_.join();
}

void TcpProber::SetTargets(const std::vector<ProbeTarget>& targets) {
  {
    absl::MutexLock lock(&mu_);
    if (targets == wanted_) return;
    wanted_ = targets;
  }
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_.get(), &one, sizeof(one));
}

void TcpProber::Reconcile() {
  std::vector<ProbeTarget> wanted;
  {
    absl::MutexLock lock(&mu_);
    wanted = wanted_;
  }
  for (auto it = probes_.begin(); it != probes_.end();) {
    const bool keep = std::any_of(wanted.begin(), wanted.end(),
                                  [&](const ProbeTarget& t) { return t == it->second.target; });
    it = keep ? std::next(it) : probes_.erase(it);
  }
  for (const ProbeTarget& t : wanted) {
    if (probes_.count(t.key) == 0) probes_[t.key].target = t;
  }
}

bool TcpProber::Start(Probe& probe, absl::Time now) {
  probe.started = now;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = absl::StrCat(probe.target.port);
  if (::getaddrinfo(probe.target.host.c_str(), port.c_str(), &hints, &found) != 0) return false;
  UniqueFd fd(::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  const bool started =
      fd && (::connect(fd.get(), found->ai_addr, found->ai_addrlen) == 0 || errno == EINPROGRESS);
  ::freeaddrinfo(found);
  if (!started) return false;
  probe.fd = std::move(fd);
  return true;
}

void TcpProber::Report(const std::vector<Outcome>& outcomes) {
  const absl::Time now = absl::Now();
  for (const Outcome& o : outcomes) on_result_(o.key, o.started, o.answered, now);
}

void TcpProber::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    Reconcile();
    std::vector<Outcome> outcomes;
    std::vector<pollfd> fds = {{wake_fd_.get(), POLLIN, 0}};
    std::vector<int> keys = {-1};
    const absl::Time now = absl::Now();
    absl::Time wake_at = absl::InfiniteFuture();
    for (auto& [key, probe] : probes_) {
      if (!probe.fd) {
        const absl::Time next = probe.started + attempt_timeout_;
        if (now < next) {
          wake_at = std::min(wake_at, next);
          continue;
        }
        if (!Start(probe, now)) {
          outcomes.push_back({key, probe.started, false});
          wake_at = std::min(wake_at, probe.started + attempt_timeout_);
          continue;
        }
      }
      fds.push_back({probe.fd.get(), POLLOUT, 0});
      keys.push_back(key);
      wake_at = std::min(wake_at, probe.started + attempt_timeout_);
    }
    Report(outcomes);
    outcomes.clear();
    const absl::Duration wait = std::max(absl::ZeroDuration(), wake_at - absl::Now());
    const int timeout_ms = wake_at == absl::InfiniteFuture()
                               ? -1
                               : static_cast<int>(absl::ToInt64Milliseconds(wait)) + 1;
    ::poll(fds.data(), fds.size(), timeout_ms);
    if (fds[0].revents != 0) {
      std::uint64_t value = 0;
      (void)!::read(wake_fd_.get(), &value, sizeof(value));
    }
    // Judge every attempt in flight: one the kernel connected (however late this thread ran)
    // was answered; one past its deadline and not connected was not.
    const absl::Time after = absl::Now();
    for (std::size_t i = 1; i < fds.size(); ++i) {
      Probe& probe = probes_.at(keys[i]);
      pollfd check = {probe.fd.get(), POLLOUT, 0};
      ::poll(&check, 1, 0);
      sockaddr_storage peer{};
      socklen_t len = sizeof(peer);
      const bool connected =
          (check.revents & POLLOUT) != 0 &&
          ::getpeername(probe.fd.get(), reinterpret_cast<sockaddr*>(&peer), &len) == 0;
      const bool failed = (check.revents & (POLLERR | POLLHUP)) != 0 && !connected;
      if (!connected && !failed && after < probe.started + attempt_timeout_) continue;
      outcomes.push_back({keys[i], probe.started, connected});
      CloseWithReset(probe.fd);
    }
    Report(outcomes);
  }
}

}  // namespace accel::rendezvous
