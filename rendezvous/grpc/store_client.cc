#include "rendezvous/grpc/store_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "accel/rendezvous/v1/rendezvous.grpc.pb.h"
#include "common/status_macros.h"
#include "rendezvous/grpc/auth.h"
#include "rendezvous/grpc/channel.h"

namespace accel::rendezvous {
namespace {

std::int64_t TimeoutMs(absl::Duration timeout) {
  if (timeout <= absl::ZeroDuration()) return 0;
  return std::max<std::int64_t>(1, absl::ToInt64Milliseconds(timeout));
}

class GrpcStore final : public Store {
 public:
  GrpcStore(std::string endpoint, std::string token, std::string name_space,
            const StoreClientOptions& options, std::shared_ptr<grpc::Channel> channel)
      : endpoint_(std::move(endpoint)),
        token_(std::move(token)),
        ns_(std::move(name_space)),
        options_(options),
        stub_(v1::Store::NewStub(channel)) {}

  absl::Status Set(std::string_view key, std::string_view value) override {
    v1::SetRequest request;
    request.set_ns(ns_);
    request.set_key(std::string(key));
    request.set_value(std::string(value));
    v1::Ack response;
    grpc::ClientContext context;
    Prepare(context, absl::ZeroDuration());
    return Check(stub_->Set(&context, request, &response));
  }

  absl::StatusOr<std::string> Get(std::string_view key, absl::Duration timeout) override {
    v1::GetRequest request;
    request.set_ns(ns_);
    request.set_key(std::string(key));
    request.set_timeout_ms(TimeoutMs(timeout));
    v1::GetResponse response;
    grpc::ClientContext context;
    Prepare(context, timeout);
    ACCEL_RETURN_IF_ERROR(Check(stub_->Get(&context, request, &response)));
    return std::move(*response.mutable_value());
  }

  absl::StatusOr<std::int64_t> Add(std::string_view key, std::int64_t delta) override {
    v1::AddRequest request;
    request.set_ns(ns_);
    request.set_key(std::string(key));
    request.set_delta(delta);
    v1::AddResponse response;
    grpc::ClientContext context;
    Prepare(context, absl::ZeroDuration());
    ACCEL_RETURN_IF_ERROR(Check(stub_->Add(&context, request, &response)));
    return response.value();
  }

  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) override {
    v1::WaitRequest request;
    request.set_ns(ns_);
    for (const std::string& key : keys) request.add_keys(key);
    request.set_timeout_ms(TimeoutMs(timeout));
    v1::Ack response;
    grpc::ClientContext context;
    Prepare(context, timeout);
    return Check(stub_->Wait(&context, request, &response));
  }

  absl::StatusOr<bool> Delete(std::string_view key) override {
    v1::DeleteRequest request;
    request.set_ns(ns_);
    request.set_key(std::string(key));
    v1::DeleteResponse response;
    grpc::ClientContext context;
    Prepare(context, absl::ZeroDuration());
    ACCEL_RETURN_IF_ERROR(Check(stub_->Delete(&context, request, &response)));
    return response.existed();
  }

  absl::StatusOr<std::string> CompareSet(std::string_view key, std::string_view expected,
                                         std::string_view desired) override {
    v1::CompareSetRequest request;
    request.set_ns(ns_);
    request.set_key(std::string(key));
    request.set_expected(std::string(expected));
    request.set_desired(std::string(desired));
    v1::CompareSetResponse response;
    grpc::ClientContext context;
    Prepare(context, absl::ZeroDuration());
    ACCEL_RETURN_IF_ERROR(Check(stub_->CompareSet(&context, request, &response)));
    return std::move(*response.mutable_value());
  }

 private:
  // The RPC deadline covers the server-side wait plus one ordinary call; the first call also
  // waits up to connect_timeout for the server to come up.
  void Prepare(grpc::ClientContext& context, absl::Duration wait) {
    absl::Duration budget = std::max(wait, absl::ZeroDuration()) + options_.rpc_deadline;
    if (!connected_.load()) budget = std::max(budget, options_.connect_timeout);
    PrepareContext(context, token_, absl::Now() + budget);
    context.set_wait_for_ready(options_.wait_for_ready);
  }

  absl::Status Check(const grpc::Status& status) {
    if (status.ok() || status.error_code() != grpc::StatusCode::UNAVAILABLE) {
      connected_.store(true);
    }
    return FromGrpc(status, absl::StrCat("store at ", endpoint_));
  }

  const std::string endpoint_;
  const std::string token_;
  const std::string ns_;
  const StoreClientOptions options_;
  const std::unique_ptr<v1::Store::Stub> stub_;
  std::atomic<bool> connected_{false};
};

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> ConnectStore(const std::string& endpoint,
                                                    const std::string& token,
                                                    const std::string& name_space,
                                                    const StoreClientOptions& options) {
  if (name_space.empty()) {
    return absl::InvalidArgumentError("connect to store: the namespace is empty");
  }
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      MakeChannel(ChannelOptions{endpoint, options.tls_ca_path});
  if (!channel.ok()) return channel.status();
  return std::make_unique<GrpcStore>(endpoint, token, name_space, options, *std::move(channel));
}

}  // namespace accel::rendezvous
