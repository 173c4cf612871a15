// OpenKv for full builds: file:// stores, or the rendezvous server's KV over gRPC. This is the
// only worker file that includes abseil / rendezvous headers (the Store bridge); worker-only
// builds compile open_kv_file_only.cc instead.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "accel/error.h"
#include "common/env_contract.h"
#include "common/env_reader.h"
#include "rendezvous/grpc/rendezvous_client.h"
#include "rendezvous/grpc/store_client.h"
#include "worker/src/store/kv.h"

namespace accel::worker {
namespace {

class StoreKv : public Kv {
 public:
  explicit StoreKv(std::unique_ptr<rendezvous::Store> store) : store_(std::move(store)) {}

  void Set(const std::string& key, const std::string& value) override {
    absl::Status status = store_->Set(key, value);
    if (!status.ok()) throw Error("store set", key, status.ToString());
  }

  std::string Get(const std::string& key, std::chrono::milliseconds timeout) override {
    absl::StatusOr<std::string> value = store_->Get(key, absl::FromChrono(timeout));
    if (!value.ok()) throw Error("store get", key, value.status().ToString());
    return *std::move(value);
  }

  std::optional<std::string> TryGet(const std::string& key,
                                    std::chrono::milliseconds timeout) override {
    absl::StatusOr<std::string> value = store_->Get(key, absl::FromChrono(timeout));
    // Not set within the wait (a wait of 0 ms answers NotFound).
    if (absl::IsDeadlineExceeded(value.status()) || absl::IsNotFound(value.status())) {
      return std::nullopt;
    }
    if (!value.ok()) throw Error("store get", key, value.status().ToString());
    return *std::move(value);
  }

 private:
  std::unique_ptr<rendezvous::Store> store_;
};

}  // namespace

std::unique_ptr<Kv> OpenKv(const std::string& endpoint, const std::string& token,
                           const std::string& run_id, int attempt) {
  const std::string kFile = "file://";
  if (endpoint.rfind(kFile, 0) == 0)
    return MakeFileKv(endpoint.substr(kFile.size()), FileNamespace(run_id, attempt));
  // The transport follows from the endpoint, the token and the user's CA, as for the launcher
  // (rendezvous/grpc/transport.h): with a token over TCP, TLS with certificates from the token.
  rendezvous::StoreClientOptions options;
  if (const char* ca = env::Get(env::kTlsCaFile)) options.tls_ca_path = ca;
  absl::StatusOr<std::unique_ptr<rendezvous::Store>> store = rendezvous::ConnectStore(
      endpoint, token, rendezvous::StoreNamespace(run_id, attempt), options);
  if (!store.ok()) throw Error("open store", endpoint, store.status().ToString());
  return std::make_unique<StoreKv>(*std::move(store));
}

}  // namespace accel::worker
