#include "launcher/agent/server_reach.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/net.h"
#include "common/unique_fd.h"

namespace accel::launcher {
namespace {

struct Probe {
  std::string address;
  UniqueFd fd;
  int error = EINPROGRESS;  // 0: answered (refused or accepted); else connect(2)'s errno
};

bool Unreachable(int error) {
  return error == ENETUNREACH || error == EHOSTUNREACH || error == EADDRNOTAVAIL ||
         error == EAFNOSUPPORT || error == EHOSTDOWN;
}

}  // namespace

absl::Status CheckServerReachable(const std::string& host, absl::Duration budget) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), "0", &hints, &list); rc != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("main_process_ip ", host, " does not resolve (", ::gai_strerror(rc),
                     "): check the name, or give machine 0's address"));
  }
  std::vector<Probe> probes;
  for (const addrinfo* a = list; a != nullptr; a = a->ai_next) {
    const std::string text = AddressText(a->ai_addr);
    if (text.empty()) continue;
    Probe probe;
    probe.address = text;
    probe.fd = UniqueFd(::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!probe.fd) {
      probe.error = errno;
    } else if (::connect(probe.fd.get(), a->ai_addr, a->ai_addrlen) == 0) {
      probe.error = 0;
    } else if (errno != EINPROGRESS) {
      probe.error = errno == ECONNREFUSED ? 0 : errno;
    }
    probes.push_back(std::move(probe));
  }
  ::freeaddrinfo(list);
  const absl::Time deadline = absl::Now() + budget;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Probe*> waiting;
    for (Probe& p : probes) {
      if (p.error == 0) return absl::OkStatus();  // a host answered
      if (p.error == EINPROGRESS) {
        fds.push_back(pollfd{p.fd.get(), POLLOUT, 0});
        waiting.push_back(&p);
      }
    }
    if (fds.empty()) break;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return absl::OkStatus();  // silent: left to the join
    const int ready =
        ::poll(fds.data(), fds.size(), static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready < 0 && errno != EINTR) return absl::OkStatus();
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      int error = 0;
      socklen_t length = sizeof(error);
      ::getsockopt(fds[i].fd, SOL_SOCKET, SO_ERROR, &error, &length);
      waiting[i]->error = error == ECONNREFUSED ? 0 : error;
    }
  }
  std::vector<std::string> why;
  for (const Probe& p : probes) {
    if (!Unreachable(p.error)) return absl::OkStatus();  // an error that proves nothing
    why.push_back(absl::StrCat(p.address, ": ", std::strerror(p.error)));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("main_process_ip ", host, " cannot be reached from this machine (",
                   absl::StrJoin(why, "; "), "): is machine 0 at that address, and is it up?"));
}

}  // namespace accel::launcher
