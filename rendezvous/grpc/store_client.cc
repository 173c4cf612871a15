#include "rendezvous/grpc/store_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "accel/rendezvous/v1/rendezvous.grpc.pb.h"
#include "common/status_macros.h"
#include "rendezvous/grpc/auth.h"
#include "rendezvous/grpc/channel.h"
#include "rendezvous/grpc/transport.h"

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
        transport_(
            ClientTransport(endpoint_, TransportSecurity{token, options.tls_ca_path, "", ""})),
        metadata_token_(MetadataToken(transport_, token)),
        ns_(std::move(name_space)),
        options_(options),
        channel_(channel),
        stub_(v1::Store::NewStub(channel)) {}

  absl::Status Set(std::string_view key, std::string_view value) override {
    v1::SetRequest request;
    request.set_ns(ns_);
    request.set_key(std::string(key));
    request.set_value(std::string(value));
    v1::Ack response;
    return Check(Invoke(absl::ZeroDuration(), [&](grpc::ClientContext* context) {
      return stub_->Set(context, request, &response);
    }));
  }

  absl::StatusOr<std::string> Get(std::string_view key, absl::Duration timeout) override {
    v1::GetRequest request;
    request.set_ns(ns_);
    request.set_key(std::string(key));
    request.set_timeout_ms(TimeoutMs(timeout));
    v1::GetResponse response;
    ACCEL_RETURN_IF_ERROR(Check(Invoke(timeout, [&](grpc::ClientContext* context) {
      return stub_->Get(context, request, &response);
    })));
    return std::move(*response.mutable_value());
  }

  absl::StatusOr<std::int64_t> Add(std::string_view key, std::int64_t delta) override {
    v1::AddRequest request;
    request.set_ns(ns_);
    request.set_key(std::string(key));
    request.set_delta(delta);
    v1::AddResponse response;
    ACCEL_RETURN_IF_ERROR(Check(Invoke(absl::ZeroDuration(), [&](grpc::ClientContext* context) {
      return stub_->Add(context, request, &response);
    })));
    return response.value();
  }

  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) override {
    v1::WaitRequest request;
    request.set_ns(ns_);
    for (const std::string& key : keys) request.add_keys(key);
    request.set_timeout_ms(TimeoutMs(timeout));
    v1::Ack response;
    return Check(Invoke(timeout, [&](grpc::ClientContext* context) {
      return stub_->Wait(context, request, &response);
    }));
  }

  absl::StatusOr<bool> Delete(std::string_view key) override {
    v1::DeleteRequest request;
    request.set_ns(ns_);
    request.set_key(std::string(key));
    v1::DeleteResponse response;
    ACCEL_RETURN_IF_ERROR(Check(Invoke(absl::ZeroDuration(), [&](grpc::ClientContext* context) {
      return stub_->Delete(context, request, &response);
    })));
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
    ACCEL_RETURN_IF_ERROR(Check(Invoke(absl::ZeroDuration(), [&](grpc::ClientContext* context) {
      return stub_->CompareSet(context, request, &response);
    })));
    return std::move(*response.mutable_value());
  }

 private:
  // Runs `rpc` (one call on the context it is given). The RPC deadline covers the server-side
  // wait plus one ordinary call. The first call waits up to connect_timeout for the server to
  // come up, but a refused TLS handshake (a wrong token, a man in the middle) ends that wait at
  // once and is named (UNAUTHENTICATED, AwaitConnection).
  template <typename Rpc>
  grpc::Status Invoke(absl::Duration wait, Rpc rpc) {
    const absl::Duration budget = std::max(wait, absl::ZeroDuration()) + options_.rpc_deadline;
    absl::Time deadline = absl::Now() + budget;
    if (!connected_.load() && options_.wait_for_ready) {
      const absl::Time give_up = absl::Now() + options_.connect_timeout;
      deadline = std::max(deadline, give_up);
      absl::Status connected = AwaitConnection(channel_, endpoint_, transport_, give_up);
      if (!connected.ok()) return ToGrpc(connected);  // refused: the next call asks again
    }
    grpc::ClientContext context;
    PrepareContext(context, metadata_token_, deadline);
    context.set_wait_for_ready(options_.wait_for_ready);
    grpc::Status status = rpc(&context);
    if (status.ok() || (status.error_code() != grpc::StatusCode::UNAVAILABLE &&
                        status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED)) {
      connected_.store(true);  // the server answered
    }
    return status;
  }

  absl::Status Check(const grpc::Status& status) {
    return FromGrpc(status, absl::StrCat("store at ", endpoint_));
  }

  const std::string endpoint_;
  const Transport transport_;
  const std::string metadata_token_;  // "" when TLS proves the token instead
  const std::string ns_;
  const StoreClientOptions options_;
  const std::shared_ptr<grpc::Channel> channel_;
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
      MakeChannel(ChannelOptions{endpoint, token, options.tls_ca_path});
  if (!channel.ok()) return channel.status();
  return std::make_unique<GrpcStore>(endpoint, token, name_space, options, *std::move(channel));
}

}  // namespace accel::rendezvous
