// Generation file and watch (generation.h).
#include "worker/src/elastic/generation.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

namespace accel::worker {
namespace {

bool ParseGenerationInt(const std::string& text, std::int64_t* out) {
  if (text.empty()) return false;
  std::size_t used = 0;
  try {
    *out = std::stoll(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size();
}

}  // namespace

std::string Generation::Format() const {
  std::ostringstream out;
  out << "generation=" << number << "\nworld=" << world << "\nbase_rank=" << base_rank
      << "\ngroup_rank=" << group_rank << "\ngroup_world=" << group_world
      << "\nlocal_world=" << local_world << "\nstore_attempt=" << store_attempt
      << "\nmaster_port=" << master_port << "\njoining=" << (joining ? 1 : 0)
      << "\nrecover_timeout_ms=" << recover_timeout_ms << "\n";
  return out.str();
}

std::optional<Generation> ParseGeneration(const std::string& text, std::string* error) {
  std::map<std::string, std::int64_t> values;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto eq = line.find('=');
    std::int64_t value = 0;
    if (eq == std::string::npos || !ParseGenerationInt(line.substr(eq + 1), &value)) {
      *error = "malformed line \"" + line + "\"";
      return std::nullopt;
    }
    values[line.substr(0, eq)] = value;
  }
  Generation g;
  auto take = [&](const char* key, auto* field) {
    auto it = values.find(key);
    if (it == values.end()) {
      if (error->empty()) *error = std::string("no ") + key;
      return;
    }
    *field = static_cast<std::remove_pointer_t<decltype(field)>>(it->second);
  };
  error->clear();
  take("generation", &g.number);
  take("world", &g.world);
  take("base_rank", &g.base_rank);
  take("group_rank", &g.group_rank);
  take("group_world", &g.group_world);
  take("local_world", &g.local_world);
  take("store_attempt", &g.store_attempt);
  take("master_port", &g.master_port);
  if (!error->empty()) return std::nullopt;
  if (auto it = values.find("joining"); it != values.end()) {
    if (it->second != 0 && it->second != 1) {
      *error = "joining must be 0 or 1, got " + std::to_string(it->second);
      return std::nullopt;
    }
    g.joining = it->second == 1;
  }
  if (auto it = values.find("recover_timeout_ms"); it != values.end()) {
    if (it->second < 0) {
      *error = "recover_timeout_ms must be >= 0, got " + std::to_string(it->second);
      return std::nullopt;
    }
    g.recover_timeout_ms = it->second;
  }
  if (g.number < 0 || g.world < 1 || g.base_rank < 0 || g.local_world < 1 ||
      g.base_rank + g.local_world > g.world || g.group_rank < 0 || g.group_world < 1 ||
      g.group_rank >= g.group_world) {
    *error = "inconsistent values: " + g.Format();
    return std::nullopt;
  }
  return g;
}

std::optional<Generation> ReadGeneration(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "no file " + path;
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto g = ParseGeneration(text.str(), error);
  if (!g) *error = path + ": " + *error;
  return g;
}

bool WriteGeneration(const std::string& path, const Generation& generation, std::string* error) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << generation.Format();
    out.flush();
    if (!out) {
      *error = "write " + tmp;
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "rename " + tmp + " to " + path;
    return false;
  }
  return true;
}

GenerationWatch::GenerationWatch(std::string path, std::int64_t known,
                                 std::function<void(std::int64_t)> on_newer,
                                 std::chrono::milliseconds period)
    : path_(std::move(path)), on_newer_(std::move(on_newer)), period_(period), known_(known) {
  thread_ = std::thread([this] { Loop(); });
}

GenerationWatch::~GenerationWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void GenerationWatch::set_known(std::int64_t known) { known_.store(known); }

void GenerationWatch::Loop() {
  std::int64_t fired = -1;  // the generation on_newer was last called for
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, period_, [&] { return stop_; });
    if (stop_) break;
    lock.unlock();
    std::string error;
    const auto g = ReadGeneration(path_, &error);
    if (g && g->number > known_.load() && g->number != fired) {
      fired = g->number;
      on_newer_(g->number);
    }
    lock.lock();
  }
}

std::optional<Generation> WaitForGeneration(const std::string& path, std::int64_t known,
                                            std::chrono::milliseconds timeout, std::string* error) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto g = ReadGeneration(path, error);
    if (g && g->number > known) return g;
    if (g) *error = "still generation " + std::to_string(g->number);
    if (std::chrono::steady_clock::now() >= end) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace accel::worker
