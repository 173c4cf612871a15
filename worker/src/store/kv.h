// Kv: the small key-value view of the rendezvous store that libaccel's core needs (Gloo
// connection, NCCL unique id). It has no abseil in its interface so the worker-only build (no
// gRPC, no Debian abseil) can compile the core; the gRPC Store bridge lives in open_kv_grpc.cc
// and is linked only into full builds.
//
// All methods are thread-safe and throw accel::Error ("<op> <key>: <cause>").
#ifndef ACCEL_WORKER_STORE_KV_H_
#define ACCEL_WORKER_STORE_KV_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace accel::worker {

class Kv {
 public:
  virtual ~Kv() = default;
  // Sets `key` to `value` (replacing it).
  virtual void Set(const std::string& key, const std::string& value) = 0;
  // Returns the value of `key`, waiting up to `timeout` for it to appear.
  virtual std::string Get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // As Get, but nullopt when `key` did not appear within `timeout` (other failures still throw):
  // what a wait in slices needs (MakeInterruptibleKv).
  virtual std::optional<std::string> TryGet(const std::string& key,
                                            std::chrono::milliseconds timeout) = 0;
};

// Returns a Kv for `endpoint`: "file:///dir" (a directory every rank can see; always available)
// or "host:port" (the rendezvous server; full builds only: worker-only builds throw). Keys live
// in the namespace of (run_id, attempt), so restarts never see an old attempt's keys. Connects
// lazily; the first Get waits at most its timeout.
std::unique_ptr<Kv> OpenKv(const std::string& endpoint, const std::string& token,
                           const std::string& run_id, int attempt);

// A Kv over files in `dir`/`name_space`: Set writes a temp file and renames it, Get polls (10 ms
// to 100 ms backoff) until the file exists. Throws when `dir` cannot be created.
std::unique_ptr<Kv> MakeFileKv(const std::string& dir, const std::string& name_space);

// Wraps `inner` so that a Get waits in slices of `slice` and, between them, asks `interrupted`:
// a non-empty answer (why) ends the wait at once with accel::Error ("store get <key>: <why>").
// In-place recovery's connect uses it so that a newer generation ends a wait for a key that a
// machine of the older one will never write (a loss, or a second change, during a regroup).
std::unique_ptr<Kv> MakeInterruptibleKv(std::unique_ptr<Kv> inner,
                                        std::function<std::string()> interrupted,
                                        std::chrono::milliseconds slice);

// The file store's namespace for (run_id, attempt): "<run_id or 'default'>.<attempt>".
std::string FileNamespace(const std::string& run_id, int attempt);

}  // namespace accel::worker

#endif  // ACCEL_WORKER_STORE_KV_H_
