#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "accel/error.h"
#include "common/safe_open.h"
#include "worker/src/store/kv.h"

namespace accel::worker {
namespace {

std::string Errno() { return std::strerror(errno); }

void MakeDirs(const std::string& path) {
  std::string partial;
  std::stringstream parts(path);
  std::string part;
  if (!path.empty() && path[0] == '/') partial = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    partial += part + "/";
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      throw Error("create store directory", partial, Errno());
    }
  }
}

// Keys may contain '/', ':' and the like; files get a hex-escaped name.
std::string FileName(const std::string& key) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '_' || c == '-' || c == '.') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

class FileKv : public Kv {
 public:
  explicit FileKv(std::string dir) : dir_(std::move(dir)) { MakeDirs(dir_); }

  void Set(const std::string& key, const std::string& value) override {
    const std::string path = dir_ + "/" + FileName(key);
    // A fresh temporary file (O_EXCL | O_NOFOLLOW, a random name) renamed into place.
    if (const int err = safe_open::ReplaceFile(path, value, 0600); err != 0) {
      throw Error("store set", key, "write " + path + ": " + std::strerror(err));
    }
  }

  std::string Get(const std::string& key, std::chrono::milliseconds timeout) override {
    if (std::optional<std::string> value = TryGet(key, timeout)) return *std::move(value);
    throw Error("store get", key,
                "deadline of " + std::to_string(timeout.count()) + " ms exceeded (" + dir_ + "/" +
                    FileName(key) + " never appeared)");
  }

  std::optional<std::string> TryGet(const std::string& key,
                                    std::chrono::milliseconds timeout) override {
    const std::string path = dir_ + "/" + FileName(key);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = std::chrono::milliseconds(10);
    while (true) {
      std::ifstream in(path, std::ios::binary);
      if (in) {
        std::ostringstream content;
        content << in.rdbuf();
        return content.str();
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return std::nullopt;
      std::this_thread::sleep_for(
          std::min(pause, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) +
                              std::chrono::milliseconds(1)));
      pause = std::min(pause * 2, std::chrono::milliseconds(100));
    }
  }

 private:
  std::string dir_;
};

}  // namespace

std::unique_ptr<Kv> MakeFileKv(const std::string& dir, const std::string& name_space) {
  return std::make_unique<FileKv>(dir + "/" + FileName(name_space));
}

std::string FileNamespace(const std::string& run_id, int attempt) {
  return (run_id.empty() ? std::string("default") : run_id) + "." + std::to_string(attempt);
}

}  // namespace accel::worker
