// Transport v2 as an attacker tries it (issue 38, token_tls.h): a probe of the rendezvous port
// (a TLS handshake without the token, as `openssl s_client -showcerts` does) learns nothing
// derived from the token, and a server that answers without the token's proof (a squatter, a man
// in the middle that accepts any client) has its replies dropped.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "accel/rendezvous/v1/rendezvous.grpc.pb.h"
#include "rendezvous/grpc/server.h"
#include "rendezvous/grpc/store_client.h"
#include "rendezvous/grpc/token_tls.h"
#include "rendezvous/join/types.h"
#include "tests/testing/tcp_tap.h"

namespace accel::rendezvous {
namespace {

using ::testing::HasSubstr;

constexpr char kToken[] = "c1a9e04f7d3b28e65f90a1c4d7b3e82f06a5d9c1e4b7f20a3d6c9e1b5f8a2d47";
constexpr char kOtherToken[] = "5e2b8d1f4a7c09e3b6d2f5a8c1e4b7d0a3f6c9e2b5d8a1f4c7e0b3d6a9f2c5e8";

std::unique_ptr<RendezvousServer> StartServer(const std::string& token) {
  ServerOptions options;
  options.bind_address = "127.0.0.1:0";
  options.run_id = "probe";
  options.num_machines = 1;
  options.token = token;
  options.rdzv_timeout = absl::Seconds(20);
  auto server = RendezvousServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

struct Probe {
  std::string cert_der;        // the server's certificate, as the probe received it
  std::string public_key_der;  // its SubjectPublicKeyInfo
  std::string structure;       // its fields but the key, the serial, the dates and the signature
  std::vector<std::string> uris;
  std::size_t app_bytes = 0;  // application data the probe received after the handshake
};

std::string Der(int (*i2d)(const X509_NAME*, unsigned char**), const X509_NAME* name) {
  unsigned char* out = nullptr;
  const int n = i2d(name, &out);
  std::string s(reinterpret_cast<char*>(out), n > 0 ? static_cast<std::size_t>(n) : 0);
  OPENSSL_free(out);
  return s;
}

// A TLS 1.3 handshake without a client certificate, then a read: what a stranger gets.
Probe ProbePort(int port) {
  ::signal(SIGPIPE, SIG_IGN);  // the server closes the connection: a write must not end the test
  Probe out;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  timeval timeout{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  SSL_set_alpn_protos(ssl, reinterpret_cast<const unsigned char*>("\x02h2"), 3);
  SSL_connect(ssl);
  if (X509* cert = SSL_get1_peer_certificate(ssl); cert != nullptr) {
    unsigned char* der = nullptr;
    int n = i2d_X509(cert, &der);
    out.cert_der.assign(reinterpret_cast<char*>(der), static_cast<std::size_t>(n));
    OPENSSL_free(der);
    der = nullptr;
    n = i2d_PUBKEY(X509_get0_pubkey(cert), &der);
    out.public_key_der.assign(reinterpret_cast<char*>(der), static_cast<std::size_t>(n));
    OPENSSL_free(der);
    out.structure =
        absl::StrCat(Der(i2d_X509_NAME, X509_get_subject_name(cert)), "|",
                     Der(i2d_X509_NAME, X509_get_issuer_name(cert)), "|", X509_get_version(cert));
    for (int i = 0; i < X509_get_ext_count(cert); ++i) {  // every extension, whole
      X509_EXTENSION* ext = X509_get_ext(cert, i);
      unsigned char* ext_der = nullptr;
      const int ext_n = i2d_X509_EXTENSION(ext, &ext_der);
      out.structure.append("|").append(reinterpret_cast<char*>(ext_der),
                                       ext_n > 0 ? static_cast<std::size_t>(ext_n) : 0);
      OPENSSL_free(ext_der);
    }
    auto* names =
        static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
    for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names); ++i) {
      const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
      absl::StrAppend(&out.structure, "|san", name->type);
      if (name->type == GEN_URI) {
        out.uris.emplace_back(reinterpret_cast<const char*>(
            ASN1_STRING_get0_data(name->d.uniformResourceIdentifier)));
      }
    }
    GENERAL_NAMES_free(names);
    X509_free(cert);
  }
  // A client preface and settings, as gRPC would send: the server must answer none of it.
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  SSL_write(ssl, preface.data(), static_cast<int>(preface.size()));
  char buffer[4096];
  int n = 0;
  while ((n = SSL_read(ssl, buffer, sizeof(buffer))) > 0)
    out.app_bytes += static_cast<std::size_t>(n);
  SSL_free(ssl);
  ::close(fd);
  SSL_CTX_free(ctx);
  return out;
}

// A job's rendezvous server in a process of its own (as every job's launcher is): this test
// binary again, running ServeForAProbe with the token in PROBE_TOKEN. Returns its port and the
// pipe that keeps it alive (closing it ends the child).
struct Child {
  pid_t pid = -1;
  int keep_alive = -1;
  int port = 0;
};

Child StartServerProcess(const std::string& token) {
  int to_child[2], from_child[2];
  // Close-on-exec: another child must not hold this one's keep-alive pipe open.
  EXPECT_EQ(::pipe2(to_child, O_CLOEXEC), 0);
  EXPECT_EQ(::pipe2(from_child, O_CLOEXEC), 0);
  Child child;
  child.pid = ::fork();
  if (child.pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test
    ::dup2(to_child[0], 0);
    ::dup2(from_child[1], 1);
    ::setenv("PROBE_TOKEN", token.c_str(), 1);
    ::execl("/proc/self/exe", "probe_server", "--gtest_also_run_disabled_tests",
            "--gtest_filter=ProbeTest.DISABLED_ServeForAProbe", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  child.keep_alive = to_child[1];
  std::string out;
  char c = 0;
  while (::read(from_child[0], &c, 1) == 1) {
    out += c;
    if (const std::size_t at = out.find("PORT "); at != std::string::npos && c == '\n') {
      child.port = std::stoi(out.substr(at + 5));
      break;
    }
  }
  ::close(from_child[0]);
  return child;
}

void StopServerProcess(Child& child) {
  ::close(child.keep_alive);
  int status = 0;
  ::waitpid(child.pid, &status, 0);
}

TEST(ProbeTest, DISABLED_ServeForAProbe) {
  auto server = StartServer(std::getenv("PROBE_TOKEN"));
  ASSERT_NE(server, nullptr);
  std::printf("PORT %d\n", server->port());
  std::fflush(stdout);
  const int null = ::open("/dev/null", O_WRONLY);  // the parent reads no more: logs must not
  ::dup2(null, 1);                                 // end this process with SIGPIPE
  char c = 0;
  while (::read(0, &c, 1) > 0) {
  }
}

// Two jobs with the same token (two processes, as two launchers are) and one with another: their
// probes differ only in what is drawn at random (the key, the serial, the dates, the signature),
// so nothing in them depends on the token, and none carries a proof of it. A job probed twice
// shows the same key (one per run, not per connection). No probe receives a byte of HTTP/2.
TEST(ProbeTest, AProbeOfThePortLearnsNothingOfTheToken) {
  Child a1 = StartServerProcess(kToken);
  Child a2 = StartServerProcess(kToken);
  Child b = StartServerProcess(kOtherToken);
  ASSERT_TRUE(a1.port > 0 && a2.port > 0 && b.port > 0);
  const Probe p1 = ProbePort(a1.port);
  const Probe p1_again = ProbePort(a1.port);
  const Probe p2 = ProbePort(a2.port);
  const Probe pb = ProbePort(b.port);
  for (Child* c : {&a1, &a2, &b}) StopServerProcess(*c);
  for (const Probe* p : {&p1, &p2, &pb}) {
    ASSERT_FALSE(p->cert_der.empty()) << "no certificate: the handshake did not start";
    EXPECT_TRUE(p->uris.empty()) << "a server certificate carries a proof URI";
    EXPECT_EQ(p->app_bytes, 0u) << "the server answered a stranger";
    EXPECT_EQ(p->structure, p1.structure) << "fields beyond the random ones differ";
  }
  EXPECT_EQ(p1.public_key_der, p1_again.public_key_der);
  EXPECT_NE(p1.public_key_der, p2.public_key_der) << "the same token gave the same key";
  EXPECT_NE(p1.public_key_der, pb.public_key_der);
  // With the token in hand, the server's certificate still verifies no proof of it.
  auto mine = TokenTlsFor(kToken);
  ASSERT_TRUE(mine.ok());
  EXPECT_FALSE(VerifyClientProof(**mine, (*mine)->server_cert_pem).ok())
      << "the server certificate verifies as a proof of the token";
}

// ---- the attacker's offline guess check ----------------------------------------------------

std::string HkdfSha256(const std::string& secret, const std::string& salt,
                       const std::string& info) {
  EVP_PKEY_CTX* kdf = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr);
  unsigned char out[32];
  std::size_t length = sizeof(out);
  const bool ok =
      kdf != nullptr && EVP_PKEY_derive_init(kdf) > 0 &&
      EVP_PKEY_CTX_set_hkdf_md(kdf, EVP_sha256()) > 0 &&
      EVP_PKEY_CTX_set1_hkdf_salt(kdf, reinterpret_cast<const unsigned char*>(salt.data()),
                                  static_cast<int>(salt.size())) > 0 &&
      EVP_PKEY_CTX_set1_hkdf_key(kdf, reinterpret_cast<const unsigned char*>(secret.data()),
                                 static_cast<int>(secret.size())) > 0 &&
      EVP_PKEY_CTX_add1_hkdf_info(kdf, reinterpret_cast<const unsigned char*>(info.data()),
                                  static_cast<int>(info.size())) > 0 &&
      EVP_PKEY_derive(kdf, out, &length) > 0;
  EVP_PKEY_CTX_free(kdf);
  return ok ? std::string(reinterpret_cast<char*>(out), length) : "";
}

std::string HmacSha256(const std::string& key, const std::string& data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &length);
  return std::string(reinterpret_cast<char*>(mac), length);
}

// Every value an attacker who read this repository could derive from a guessed token and find
// in what it captured, raw and as hex: v1's CA public key (HKDF-SHA256 of the token with its
// fixed salt, an Ed25519 seed: the issue-38 oracle), transport v2's MAC and proof keys, the client
// proof of each certificate's public key, the server proof of each certificate.
bool GuessMatches(const std::string& guess, const std::string& captured,
                  const std::vector<std::string>& cert_ders) {
  std::vector<std::string> derived;
  const std::string v1_seed =
      HkdfSha256(guess, "accel-launch rendezvous token CA", "ed25519 seed v1");
  if (EVP_PKEY* v1 = EVP_PKEY_new_raw_private_key(
          EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(v1_seed.data()),
          v1_seed.size())) {
    unsigned char raw[32];
    std::size_t n = sizeof(raw);
    if (EVP_PKEY_get_raw_public_key(v1, raw, &n) == 1) {
      derived.emplace_back(reinterpret_cast<char*>(raw), n);
    }
    EVP_PKEY_free(v1);
  }
  const std::string salt = "accel-launch rendezvous transport v2";
  const std::string mac_key = HkdfSha256(guess, salt, "client certificate");
  const std::string proof_key = HkdfSha256(guess, salt, "server proof");
  derived.push_back(mac_key);
  derived.push_back(proof_key);
  for (const std::string& der : cert_ders) {
    const auto* at = reinterpret_cast<const unsigned char*>(der.data());
    X509* cert = d2i_X509(nullptr, &at, static_cast<long>(der.size()));
    if (cert == nullptr) continue;
    unsigned char* spki = nullptr;
    const int n = i2d_PUBKEY(X509_get0_pubkey(cert), &spki);
    derived.push_back(HmacSha256(
        mac_key,
        absl::StrCat(kClientProofUri, std::string(reinterpret_cast<char*>(spki), n > 0 ? n : 0))));
    OPENSSL_free(spki);
    derived.push_back(HmacSha256(proof_key, absl::StrCat(kServerProofKey, der)));
    X509_free(cert);
  }
  for (const std::string& value : derived) {
    if (value.empty()) continue;
    if (captured.find(value) != std::string::npos ||
        captured.find(absl::BytesToHexString(value)) != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string DerOfPem(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  unsigned char* der = nullptr;
  const int n = cert != nullptr ? i2d_X509(cert, &der) : 0;
  std::string out(reinterpret_cast<char*>(der), n > 0 ? static_cast<std::size_t>(n) : 0);
  OPENSSL_free(der);
  X509_free(cert);
  return out;
}

// The attack of issue 38, tried against transport v2: probe a job's port (every byte the server
// sends, and its certificate as the TLS client decrypted it), then check guesses of the token
// against it offline. Even the right token is not confirmed by anything the probe got. The
// control shows the check works where the token is there to find: it confirms the right token
// (and only it) against a client certificate, which only a server a client connects to sees (the
// residual for a squatter or a man in the middle, hence the 128-bit floor on tokens).
TEST(ProbeTest, AGuessedTokenCannotBeCheckedAgainstWhatAProbeGets) {
  Child job = StartServerProcess(kToken);
  ASSERT_GT(job.port, 0);
  std::string captured;
  Probe probe;
  {
    testing::TcpTap tap(job.port);
    probe = ProbePort(tap.port());
    captured = tap.ServerBytes();
  }
  StopServerProcess(job);
  ASSERT_FALSE(probe.cert_der.empty());
  ASSERT_GT(captured.size(), 200u) << "the probe captured no handshake";
  captured += probe.cert_der;  // decrypted: what the attacker can read of the handshake
  for (const std::string& guess : {std::string(kToken), std::string(kOtherToken)}) {
    EXPECT_FALSE(GuessMatches(guess, captured, {probe.cert_der}))
        << "a probe verifies the guess " << guess;
  }
  // The control: a client certificate of this token (what a server is shown).
  auto client = TokenTlsFor(kToken);
  ASSERT_TRUE(client.ok());
  const std::string client_der = DerOfPem((*client)->client_cert_pem);
  EXPECT_TRUE(GuessMatches(kToken, client_der, {client_der}));
  EXPECT_FALSE(GuessMatches(kOtherToken, client_der, {client_der}));
}

// A server that holds no proof of the token, accepts any client and answers every Get (a squatter
// on machine 0's port, or a man in the middle that terminated TLS itself): the client's call ends
// UNAUTHENTICATED naming it, the squatter's value never reaches the caller, and the squatter is
// never sent the call.
class SquatterStore : public v1::Store::CallbackService {
 public:
  std::atomic<int> gets{0};

 private:
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context, const v1::GetRequest*,
                                v1::GetResponse* response) override {
    gets.fetch_add(1);
    response->set_value("squatted");
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

TEST(ProbeTest, RepliesWithoutTheServersProofAreDropped) {
  auto identity = TokenTlsFor("the-squatters-own-token-7f3e9a1c5b2d8e4f6a0c3b9d");
  ASSERT_TRUE(identity.ok());
  auto provider = std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
      std::vector<grpc::experimental::IdentityKeyCertPair>{
          {(*identity)->key_pem, (*identity)->server_cert_pem}});
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  options.set_cert_request_type(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_BUT_DONT_VERIFY);
  SquatterStore service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::experimental::TlsServerCredentials(options), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> squatter = builder.BuildAndStart();
  ASSERT_NE(squatter, nullptr);
  StoreClientOptions client;
  client.connect_timeout = absl::Seconds(5);
  client.rpc_deadline = absl::Seconds(5);
  const std::string endpoint = absl::StrCat("127.0.0.1:", port);
  auto store = ConnectStore(endpoint, kToken, StoreNamespace("probe", 0), client);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::string> got = (*store)->Get("k", absl::ZeroDuration());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnauthenticated) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("did not prove that it holds this job's token"));
  EXPECT_NE(got.value_or(""), "squatted");
  // The client asked for the server's proof with a content-free call first: the squatter never
  // saw the request (its namespace and key).
  EXPECT_EQ(service.gets.load(), 0);
  squatter->Shutdown();
}

}  // namespace
}  // namespace accel::rendezvous
