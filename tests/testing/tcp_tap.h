// TcpTap: a TCP forwarder on 127.0.0.1 that records every byte of every connection, each way: what
// a sniffer on the wire sees. Replay() sends recorded bytes to a server on a fresh connection and
// returns what came back. For the transport tests (tests/mp/rendezvous/grpc/transport_test.cc).
// Header-only; POSIX sockets and threads. Thread-safe.
#ifndef ACCEL_TESTS_TESTING_TCP_TAP_H_
#define ACCEL_TESTS_TESTING_TCP_TAP_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace accel::testing {

// Returns a socket connected to 127.0.0.1:`port`, or -1.
inline int ConnectLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

// Sends `bytes` to 127.0.0.1:`port` on a new connection and returns what the server sends back
// within `listen_for` (or until it closes).
inline std::string Replay(int port, const std::string& bytes,
                          std::chrono::milliseconds listen_for) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  std::string back;
  std::size_t sent = 0;
  const auto end = std::chrono::steady_clock::now() + listen_for;
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, static_cast<short>(POLLIN | (sent < bytes.size() ? POLLOUT : 0)), 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    if ((p.revents & POLLOUT) != 0) {
      const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      char buffer[4096];
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      back.append(buffer, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return back;
}

class TcpTap {
 public:
  // Listens on 127.0.0.1 (a free port) and forwards each connection to 127.0.0.1:`backend_port`.
  explicit TcpTap(int backend_port) : backend_port_(backend_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(addr);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listen_fd_, 64) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    accepter_ = std::thread([this] { AcceptLoop(); });
  }
  TcpTap(const TcpTap&) = delete;
  TcpTap& operator=(const TcpTap&) = delete;
  ~TcpTap() {
    stop_ = true;
    if (accepter_.joinable()) accepter_.join();
    for (std::thread& t : pumps_) t.join();
    ::close(listen_fd_);
  }

  int port() const { return port_; }
  // Every byte clients sent / servers sent, over all connections so far.
  std::string ClientBytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return from_clients_;
  }
  std::string ServerBytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return from_servers_;
  }
  // The client's bytes of each connection, in order of connection.
  std::vector<std::string> ClientBytesPerConnection() {
    std::lock_guard<std::mutex> lock(mu_);
    return per_connection_;
  }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      const int server = ConnectLoopback(backend_port_);
      if (server < 0) {
        ::close(client);
        continue;
      }
      std::size_t index = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        index = per_connection_.size();
        per_connection_.emplace_back();
      }
      pumps_.emplace_back([this, client, server, index] { Pump(client, server, index); });
    }
  }

  void Pump(int client, int server, std::size_t index) {
    bool open = true;
    while (open && !stop_) {
      pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (::poll(p, 2, 50) <= 0) continue;
      for (int side = 0; side < 2 && open; ++side) {
        if ((p[side].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        char buffer[16384];
        const ssize_t n = ::recv(p[side].fd, buffer, sizeof(buffer), 0);
        if (n <= 0) {
          open = false;
          break;
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          (side == 0 ? from_clients_ : from_servers_).append(buffer, static_cast<std::size_t>(n));
          if (side == 0) per_connection_[index].append(buffer, static_cast<std::size_t>(n));
        }
        const int to = side == 0 ? server : client;
        std::size_t done = 0;
        while (done < static_cast<std::size_t>(n)) {
          const ssize_t w =
              ::send(to, buffer + done, static_cast<std::size_t>(n) - done, MSG_NOSIGNAL);
          if (w <= 0) {
            open = false;
            break;
          }
          done += static_cast<std::size_t>(w);
        }
      }
    }
    ::close(client);
    ::close(server);
  }

  const int backend_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread accepter_;
  std::vector<std::thread> pumps_;  // touched by the accepter thread only, joined after it
  std::mutex mu_;
  std::string from_clients_;
  std::string from_servers_;
  std::vector<std::string> per_connection_;
};

}  // namespace accel::testing

#endif  // ACCEL_TESTS_TESTING_TCP_TAP_H_
