// OpenKv for builds without gRPC (worker-only): file:// stores only.
#include <memory>
#include <string>

#include "accel/error.h"
#include "worker/src/store/kv.h"

namespace accel::worker {

std::unique_ptr<Kv> OpenKv(const std::string& endpoint, const std::string& /*token*/,
                           const std::string& run_id, int attempt) {
  const std::string kFile = "file://";
  if (endpoint.rfind(kFile, 0) == 0)
    return MakeFileKv(endpoint.substr(kFile.size()), FileNamespace(run_id, attempt));
  throw Error("open store", endpoint,
              "this libaccel was built without gRPC (ACCEL_WORKER_ONLY); only file:///dir "
              "endpoints are supported");
}

}  // namespace accel::worker
