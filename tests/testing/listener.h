// A TCP socket listening on an address, for tests that need a port in use.
#ifndef ACCEL_TESTS_TESTING_LISTENER_H_
#define ACCEL_TESTS_TESTING_LISTENER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "common/unique_fd.h"

namespace accel::testing {

// Returns a socket listening on IPv4 `ip`:`port`; invalid (and errno set) when it cannot bind.
inline UniqueFd ListenOn(const std::string& ip, int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  if (!fd || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd.get(), 1) != 0) {
    return UniqueFd();
  }
  return fd;
}

}  // namespace accel::testing

#endif  // ACCEL_TESTS_TESTING_LISTENER_H_
