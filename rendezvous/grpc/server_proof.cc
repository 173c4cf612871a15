#include "rendezvous/grpc/server_proof.h"

#include <openssl/crypto.h>

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "rendezvous/grpc/grpc_log.h"

namespace accel::rendezvous {
namespace {

using grpc::experimental::InterceptionHookPoints;

// The keys of the servers that proved a token to this process: endpoint and token (its own
// proof, unique per token and process) -> the server certificate's SubjectPublicKeyInfo.
absl::Mutex pins_mu(absl::kConstInit);
std::map<std::string, std::string>& Pins() {
  static auto* pins = new std::map<std::string, std::string>();
  return *pins;
}
std::string PinKey(const TokenTls& tls, const std::string& endpoint) {
  return absl::StrCat(endpoint, "\n", tls.own_proof);
}
std::string PinnedKey(const TokenTls& tls, const std::string& endpoint) {
  absl::MutexLock lock(&pins_mu);
  auto it = Pins().find(PinKey(tls, endpoint));
  return it == Pins().end() ? "" : it->second;
}

class ClientProofVerifier : public grpc::experimental::ExternalCertificateVerifier {
 public:
  explicit ClientProofVerifier(std::shared_ptr<const TokenTls> tls) : tls_(std::move(tls)) {}

  bool Verify(grpc::experimental::TlsCustomVerificationCheckRequest* request,
              std::function<void(grpc::Status)> /*callback*/, grpc::Status* sync_status) override {
    const grpc::string_ref pem = request->peer_cert();
    const absl::Status proved = VerifyClientProof(*tls_, std::string_view(pem.data(), pem.size()));
    if (!proved.ok()) NoteRefusedHandshake(absl::StrCat("handshake failed: ", proved.message()));
    *sync_status = proved.ok() ? grpc::Status::OK
                               : grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                              std::string(proved.message()));
    return true;  // synchronous
  }
  void Cancel(grpc::experimental::TlsCustomVerificationCheckRequest* /*request*/) override {}

 private:
  std::shared_ptr<const TokenTls> tls_;
};

class PinnedServerVerifier : public grpc::experimental::ExternalCertificateVerifier {
 public:
  PinnedServerVerifier(std::shared_ptr<const TokenTls> tls, std::string endpoint)
      : tls_(std::move(tls)), endpoint_(std::move(endpoint)) {}

  bool Verify(grpc::experimental::TlsCustomVerificationCheckRequest* request,
              std::function<void(grpc::Status)> /*callback*/, grpc::Status* sync_status) override {
    const std::string pinned = PinnedKey(*tls_, endpoint_);
    const grpc::string_ref pem = request->peer_cert();
    if (pinned.empty() || PublicKeyDerOf(std::string_view(pem.data(), pem.size())) == pinned) {
      *sync_status = grpc::Status::OK;
    } else {
      *sync_status = grpc::Status(
          grpc::StatusCode::UNAUTHENTICATED,
          absl::StrCat(kPinMismatch, " (the key of the server that proved this job's token at ",
                       endpoint_, "), so nothing was sent to it"));
    }
    return true;  // synchronous
  }
  void Cancel(grpc::experimental::TlsCustomVerificationCheckRequest* /*request*/) override {}

 private:
  std::shared_ptr<const TokenTls> tls_;
  std::string endpoint_;
};

// ServerProof, remembered per token and client certificate: a client process shows one
// certificate on all its calls, and parsing it for every reply doubled the time 4096 agents took
// to join over 64 channels (0.9 s -> 2.2 s). Bounded: cleared at 4096 certificates.
std::string CachedServerProof(const TokenTls& tls, std::string_view client_pem) {
  static absl::Mutex mu(absl::kConstInit);
  static auto* cache = new std::map<std::string, std::string>();
  std::string key = tls.own_proof;
  key.append(client_pem.data(), client_pem.size());
  {
    absl::MutexLock lock(&mu);
    auto it = cache->find(key);
    if (it != cache->end()) return it->second;
  }
  std::string proof = ServerProof(tls, client_pem);
  absl::MutexLock lock(&mu);
  if (cache->size() >= 4096) cache->clear();
  cache->emplace(std::move(key), proof);
  return proof;
}

// Adds the server's proof for the connection's client certificate to every reply.
class ServerProofInterceptor : public grpc::experimental::Interceptor {
 public:
  ServerProofInterceptor(grpc::experimental::ServerRpcInfo* info,
                         std::shared_ptr<const TokenTls> tls)
      : info_(info), tls_(std::move(tls)) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      if (const std::string& proof = Proof(); !proof.empty()) {
        methods->GetSendInitialMetadata()->emplace(kServerProofKey, proof);
      }
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      if (const std::string& proof = Proof(); !proof.empty()) {
        methods->GetSendTrailingMetadata()->emplace(kServerProofKey, proof);
      }
    }
    methods->Proceed();
  }

 private:
  const std::string& Proof() {
    if (!computed_) {
      computed_ = true;
      auto context = info_->server_context()->auth_context();
      if (context != nullptr) {
        for (const grpc::string_ref& pem : context->FindPropertyValues("x509_pem_cert")) {
          proof_ = CachedServerProof(*tls_, std::string_view(pem.data(), pem.size()));
          break;
        }
      }
    }
    return proof_;
  }

  grpc::experimental::ServerRpcInfo* info_;
  std::shared_ptr<const TokenTls> tls_;
  bool computed_ = false;
  std::string proof_;
};

class ServerProofFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit ServerProofFactory(std::shared_ptr<const TokenTls> tls) : tls_(std::move(tls)) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new ServerProofInterceptor(info, tls_);
  }

 private:
  std::shared_ptr<const TokenTls> tls_;
};

// 1: the proof is there and right; -1: metadata came without it, or with a wrong one; 0: none.
int Check(const std::multimap<grpc::string_ref, grpc::string_ref>* metadata,
          const std::string& expected) {
  if (metadata == nullptr || metadata->empty()) return 0;
  auto it = metadata->find(kServerProofKey);
  if (it == metadata->end()) return -1;
  const grpc::string_ref& given = it->second;
  return given.size() == expected.size() &&
                 CRYPTO_memcmp(given.data(), expected.data(), expected.size()) == 0
             ? 1
             : -1;
}

// Drops a reply that does not carry the server's proof (see the header), pins the key of a server
// that proved it, and settles the proof probe (kProofProbeMethod): OK when proved, else
// UNAUTHENTICATED unless the call failed on this side (no connection, the deadline).
class ClientProofInterceptor : public grpc::experimental::Interceptor {
 public:
  ClientProofInterceptor(grpc::experimental::ClientRpcInfo* info,
                         std::shared_ptr<const TokenTls> tls, std::string endpoint)
      : info_(info),
        tls_(std::move(tls)),
        endpoint_(std::move(endpoint)),
        probe_(std::string_view(info->method() == nullptr ? "" : info->method()) ==
               kProofProbeMethod) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      Note(Check(methods->GetRecvInitialMetadata(), tls_->own_proof));
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() != nullptr && !proved_) {
      Reject();  // a message before any proof: not from this job's server
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_STATUS)) {
      if (!proved_) Note(Check(methods->GetRecvTrailingMetadata(), tls_->own_proof));
      grpc::Status* status = methods->GetRecvStatus();
      const bool local = status->error_code() == grpc::StatusCode::UNAVAILABLE ||
                         status->error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                         status->error_code() == grpc::StatusCode::CANCELLED;
      if (probe_ && proved_) {
        *status = grpc::Status::OK;
      } else if (rejected_ || (!proved_ && (status->ok() || (probe_ && !local)))) {
        *status = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, UnprovenReplyMessage(endpoint_));
      }
    }
    methods->Proceed();
  }

 private:
  void Note(int verdict) {
    if (verdict > 0 && !proved_) {
      proved_ = true;
      Pin();
    }
    if (verdict < 0 && !proved_) Reject();
  }
  void Reject() {
    if (rejected_) return;
    rejected_ = true;
    info_->client_context()->TryCancel();
  }
  // The server that proved the token is the one of this call's connection.
  void Pin() {
    std::shared_ptr<const grpc::AuthContext> context = info_->client_context()->auth_context();
    if (context == nullptr) return;
    for (const grpc::string_ref& pem : context->FindPropertyValues("x509_pem_cert")) {
      std::string key = PublicKeyDerOf(std::string_view(pem.data(), pem.size()));
      if (key.empty()) return;
      absl::MutexLock lock(&pins_mu);
      Pins().emplace(PinKey(*tls_, endpoint_), std::move(key));  // the first pin stays
      return;
    }
  }

  grpc::experimental::ClientRpcInfo* info_;
  std::shared_ptr<const TokenTls> tls_;
  std::string endpoint_;
  const bool probe_;
  bool proved_ = false;
  bool rejected_ = false;
};

class ClientProofFactory : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  ClientProofFactory(std::shared_ptr<const TokenTls> tls, std::string endpoint)
      : tls_(std::move(tls)), endpoint_(std::move(endpoint)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override {
    return new ClientProofInterceptor(info, tls_, endpoint_);
  }

 private:
  std::shared_ptr<const TokenTls> tls_;
  std::string endpoint_;
};

}  // namespace

std::shared_ptr<grpc::experimental::CertificateVerifier> MakeClientProofVerifier(
    std::shared_ptr<const TokenTls> tls) {
  return grpc::experimental::ExternalCertificateVerifier::Create<ClientProofVerifier>(
      std::move(tls));
}

std::shared_ptr<grpc::experimental::CertificateVerifier> MakePinnedServerVerifier(
    std::shared_ptr<const TokenTls> tls, const std::string& endpoint) {
  return grpc::experimental::ExternalCertificateVerifier::Create<PinnedServerVerifier>(
      std::move(tls), endpoint);
}

bool ServerProved(const TokenTls& tls, const std::string& endpoint) {
  return !PinnedKey(tls, endpoint).empty();
}

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
ServerProofInterceptors(std::shared_ptr<const TokenTls> tls) {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> out;
  out.push_back(std::make_unique<ServerProofFactory>(std::move(tls)));
  return out;
}

std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
ClientProofInterceptors(std::shared_ptr<const TokenTls> tls, const std::string& endpoint) {
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> out;
  out.push_back(std::make_unique<ClientProofFactory>(std::move(tls), endpoint));
  return out;
}

std::string UnprovenReplyMessage(const std::string& endpoint) {
  return absl::StrCat(
      "the server at ", endpoint,
      " did not prove that it holds this job's token (its reply carries no proof), so the reply "
      "was dropped: the rendezvous token is wrong on machine 0, something else answers on that "
      "port (a man in the middle, or a process that took the port before machine 0's "
      "launcher), or machine 0 runs an accel-launch older than transport v",
      kTransportVersion);
}

}  // namespace accel::rendezvous
