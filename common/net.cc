#include "common/net.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/unique_fd.h"

namespace accel {

absl::StatusOr<int> PickFreePort(const std::string& host) {
  const bool v6 = host.find(':') != std::string::npos;
  UniqueFd fd(::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return absl::ErrnoToStatus(errno, "pick free port: socket");
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&storage);
    a->sin6_family = AF_INET6;
    if (::inet_pton(AF_INET6, host.c_str(), &a->sin6_addr) != 1) a->sin6_addr = in6addr_any;
    length = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&storage);
    a->sin_family = AF_INET;
    if (::inet_pton(AF_INET, host.c_str(), &a->sin_addr) != 1) a->sin_addr.s_addr = INADDR_ANY;
    length = sizeof(sockaddr_in);
  }
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&storage), length) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("pick free port: bind ", host, ":0"));
  }
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&storage), &length) != 0) {
    return absl::ErrnoToStatus(errno, "pick free port: getsockname");
  }
  return v6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port)
            : ntohs(reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
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
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw =
        a->ai_family == AF_INET6
            ? static_cast<const void*>(
                  &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr)
            : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr);
    if (::inet_ntop(a->ai_family, raw, text, sizeof(text)) == nullptr) continue;
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
