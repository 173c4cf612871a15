// FakePmi2Server: slurmstepd's side of the PMI-2 wire protocol for one task, on a socketpair,
// served by a thread (tests/mp/launcher/config). It answers init, fullinit (with the rank and
// size it was given), kvs-put, kvs-fence, kvs-get and finalize, and records every command.
// Knobs: `kvs` preloads what other tasks "put"; `silent_fence` never answers kvs-fence (a peer
// that never arrives); `fullinit_rc` answers fullinit with that rc.
#ifndef ACCEL_TESTS_TESTING_FAKE_PMI2_SERVER_H_
#define ACCEL_TESTS_TESTING_FAKE_PMI2_SERVER_H_

#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace accel::testing {

class FakePmi2Server {
 public:
  struct Options {
    int rank = 0;
    int size = 1;
    std::map<std::string, std::string> kvs;
    bool silent_fence = false;
    int fullinit_rc = 0;
  };

  explicit FakePmi2Server(Options options) : options_(std::move(options)) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::perror("socketpair");
    client_fd_ = fds[0];
    server_fd_ = fds[1];
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakePmi2Server() {
    ::shutdown(server_fd_, SHUT_RDWR);
    thread_.join();
    ::close(server_fd_);
    if (client_fd_ >= 0) ::close(client_fd_);
  }

  // The task's end; whoever takes it owns it.
  int TakeClientFd() { return std::exchange(client_fd_, -1); }

  // Every command received, as "name key=value ..." (the init line as "init").
  std::vector<std::string> commands() const {
    absl::MutexLock lock(&mu_);
    return commands_;
  }
  std::map<std::string, std::string> kvs() const {
    absl::MutexLock lock(&mu_);
    return options_.kvs;
  }

 private:
  bool ReadN(std::string* out, std::size_t n) {
    out->assign(n, '\0');
    std::size_t got = 0;
    while (got < n) {
      const ssize_t r = ::read(server_fd_, out->data() + got, n - got);
      if (r <= 0) return false;
      got += static_cast<std::size_t>(r);
    }
    return true;
  }
  void Send(const std::string& body) {
    std::string length = std::to_string(body.size());
    length.resize(6, ' ');
    const std::string all = length + body;
    (void)!::write(server_fd_, all.data(), all.size());
  }
  static std::map<std::string, std::string> Fields(const std::string& body, std::string* name) {
    std::map<std::string, std::string> out;
    std::size_t start = 0;
    while (start < body.size()) {
      std::size_t end = body.find(';', start);
      if (end == std::string::npos) end = body.size();
      const std::string field = body.substr(start, end - start);
      const std::size_t eq = field.find('=');
      if (eq != std::string::npos) out[field.substr(0, eq)] = field.substr(eq + 1);
      start = end + 1;
    }
    *name = out["cmd"];
    return out;
  }
  void Serve() {
    std::string line;
    char c = 0;
    while (::read(server_fd_, &c, 1) == 1 && c != '\n') line += c;
    Record("init");
    const std::string ok = "cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n";
    (void)!::write(server_fd_, ok.data(), ok.size());
    std::string length;
    std::string body;
    while (ReadN(&length, 6) && ReadN(&body, std::stoul(length))) {
      std::string name;
      auto f = Fields(body, &name);
      std::string record = name;
      for (const auto& [k, v] : f) {
        if (k != "cmd") record += " " + k + "=" + v;
      }
      Record(record);
      if (name == "fullinit") {
        Send("cmd=fullinit-response;rc=" + std::to_string(options_.fullinit_rc) +
             ";pmi-version=2;pmi-subversion=0;rank=" + std::to_string(options_.rank) +
             ";size=" + std::to_string(options_.size) + ";appnum=-1;");
      } else if (name == "kvs-put") {
        absl::MutexLock lock(&mu_);
        options_.kvs[f["key"]] = f["value"];
        Send("cmd=kvs-put-response;rc=0;");
      } else if (name == "kvs-fence") {
        if (!options_.silent_fence) Send("cmd=kvs-fence-response;rc=0;");
      } else if (name == "kvs-get") {
        absl::MutexLock lock(&mu_);
        auto it = options_.kvs.find(f["key"]);
        Send(it == options_.kvs.end()
                 ? "cmd=kvs-get-response;rc=0;found=FALSE;"
                 : "cmd=kvs-get-response;rc=0;found=TRUE;value=" + it->second + ";");
      } else if (name == "finalize") {
        Send("cmd=finalize-response;rc=0;");
      }
    }
  }
  void Record(const std::string& what) {
    absl::MutexLock lock(&mu_);
    commands_.push_back(what);
  }

  Options options_;
  int client_fd_ = -1;
  int server_fd_ = -1;
  mutable absl::Mutex mu_;
  std::vector<std::string> commands_;
  std::thread thread_;
};

}  // namespace accel::testing

#endif  // ACCEL_TESTS_TESTING_FAKE_PMI2_SERVER_H_
