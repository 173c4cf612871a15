#include "common/net.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/unique_fd.h"

namespace accel {
namespace {

// A socket address for `host` (IPv4, IPv6, or every address) and `port`.
struct Address {
  sockaddr_storage storage{};
  socklen_t length = 0;
  bool v6 = false;
};

Address MakeAddress(const std::string& host, int port) {
  Address address;
  address.v6 = host.find(':') != std::string::npos;
  const auto net_port = htons(static_cast<std::uint16_t>(port));
  if (address.v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&address.storage);
    a->sin6_family = AF_INET6;
    a->sin6_port = net_port;
    if (::inet_pton(AF_INET6, host.c_str(), &a->sin6_addr) != 1) a->sin6_addr = in6addr_any;
    address.length = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&address.storage);
    a->sin_family = AF_INET;
    a->sin_port = net_port;
    if (::inet_pton(AF_INET, host.c_str(), &a->sin_addr) != 1) a->sin_addr.s_addr = INADDR_ANY;
    address.length = sizeof(sockaddr_in);
  }
  return address;
}

}  // namespace

absl::StatusOr<int> PickFreePort(const std::string& host) {
  Address address = MakeAddress(host, 0);
  UniqueFd fd(::socket(address.v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return absl::ErrnoToStatus(errno, "pick free port: socket");
  auto* raw = reinterpret_cast<sockaddr*>(&address.storage);
  if (::bind(fd.get(), raw, address.length) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("pick free port: bind ", host, ":0"));
  }
  if (::getsockname(fd.get(), raw, &address.length) != 0) {
    return absl::ErrnoToStatus(errno, "pick free port: getsockname");
  }
  return address.v6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&address.storage)->sin6_port)
                    : ntohs(reinterpret_cast<sockaddr_in*>(&address.storage)->sin_port);
}

absl::Status CheckPortFree(const std::string& host, int port) {
  Address address = MakeAddress(host, port);
  const std::string where = absl::StrCat("port ", port, " on ", host.empty() ? "*" : host);
  UniqueFd fd(::socket(address.v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return absl::ErrnoToStatus(errno, absl::StrCat("check ", where, ": socket"));
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address.storage), address.length) == 0) {
    return absl::OkStatus();
  }
  if (errno == EADDRINUSE) return absl::FailedPreconditionError(absl::StrCat(where, " is in use"));
  return absl::ErrnoToStatus(errno, absl::StrCat("check ", where));
}

std::string AddressText(const struct sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw = nullptr;
  if (address->sa_family == AF_INET6) {
    raw = &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
  } else if (address->sa_family == AF_INET) {
    raw = &reinterpret_cast<const sockaddr_in*>(address)->sin_addr;
  }
  if (raw == nullptr || ::inet_ntop(address->sa_family, raw, text, sizeof(text)) == nullptr) {
    return "";
  }
  return text;
}

absl::StatusOr<std::string> LocalAddressFor(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &list); rc != 0) {
    return absl::NotFoundError(absl::StrCat("resolve ", host, ": ", ::gai_strerror(rc)));
  }
  std::vector<std::string> seen;
  std::string local;
  for (const addrinfo* a = list; a != nullptr && local.empty(); a = a->ai_next) {
    const std::string text = AddressText(a->ai_addr);
    if (text.empty()) continue;
    seen.emplace_back(text);
    // Binding port 0 succeeds exactly when the address is one of this machine's.
    UniqueFd fd(::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd && ::bind(fd.get(), a->ai_addr, a->ai_addrlen) == 0) local = text;
  }
  ::freeaddrinfo(list);
  if (!local.empty()) return local;
  return absl::NotFoundError(
      absl::StrCat(host, " (", absl::StrJoin(seen, ", "), ") is not an address of this machine"));
}

}  // namespace accel
