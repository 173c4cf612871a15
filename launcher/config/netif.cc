#include "launcher/config/netif.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace accel::launcher {

absl::StatusOr<std::string> InterfaceAddress(const std::string& name) {
  struct ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return absl::ErrnoToStatus(errno, "getifaddrs");
  std::string address;
  std::set<std::string> with_ipv4;
  for (struct ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) continue;
    with_ipv4.insert(it->ifa_name);
    if (address.empty() && name == it->ifa_name) {
      char text[INET_ADDRSTRLEN] = {};
      struct sockaddr_in ipv4;
      std::memcpy(&ipv4, it->ifa_addr, sizeof(ipv4));
      if (inet_ntop(AF_INET, &ipv4.sin_addr, text, sizeof(text)) != nullptr) address = text;
    }
  }
  freeifaddrs(list);
  if (!address.empty()) return address;
  return absl::NotFoundError(absl::StrCat("network_interface '", name,
                                          "' has no IPv4 address on this machine (interfaces "
                                          "with one: ",
                                          absl::StrJoin(with_ipv4, ", "), ")"));
}

}  // namespace accel::launcher
