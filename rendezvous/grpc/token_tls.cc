#include "rendezvous/grpc/token_tls.h"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <array>
#include <map>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace accel::rendezvous {
namespace {

// Changing any of these changes every proof: launchers of different versions then refuse each
// other (and say so: kTransportVersion).
constexpr char kHkdfSalt[] = "accel-launch rendezvous transport v2";
constexpr char kMacInfo[] = "client certificate";
constexpr char kProofInfo[] = "server proof";
constexpr long kCertValidSeconds = 20L * 365 * 24 * 3600;  // ephemeral: outlives any job
constexpr char kPublicCaSeed[] = "accel-launch transport v2 public client CA (not a secret)";
constexpr char kPublicCaName[] = "accel-launch public client CA";

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(X509_NAME* p) const { X509_NAME_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
};
template <typename T>
using Owned = std::unique_ptr<T, Free>;

// Returns INTERNAL "<what>: <OpenSSL's queued errors>" and clears the queue.
absl::Status OpenSslError(absl::string_view what) {
  std::string detail;
  while (const unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof(buffer));
    absl::StrAppend(&detail, detail.empty() ? "" : "; ", buffer);
  }
  return absl::InternalError(
      absl::StrCat("token TLS: ", what, ": ", detail.empty() ? "failed" : detail));
}

absl::StatusOr<std::string> Hkdf(const std::string& token, absl::string_view info) {
  Owned<EVP_PKEY_CTX> kdf(EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr));
  std::array<unsigned char, 32> out{};
  std::size_t length = out.size();
  const auto* salt = reinterpret_cast<const unsigned char*>(kHkdfSalt);
  const auto* key = reinterpret_cast<const unsigned char*>(token.data());
  if (kdf == nullptr || EVP_PKEY_derive_init(kdf.get()) <= 0 ||
      EVP_PKEY_CTX_set_hkdf_md(kdf.get(), EVP_sha256()) <= 0 ||
      EVP_PKEY_CTX_set1_hkdf_salt(kdf.get(), salt, sizeof(kHkdfSalt) - 1) <= 0 ||
      EVP_PKEY_CTX_set1_hkdf_key(kdf.get(), key, static_cast<int>(token.size())) <= 0 ||
      EVP_PKEY_CTX_add1_hkdf_info(kdf.get(), reinterpret_cast<const unsigned char*>(info.data()),
                                  static_cast<int>(info.size())) <= 0 ||
      EVP_PKEY_derive(kdf.get(), out.data(), &length) <= 0 || length != out.size()) {
    return OpenSslError("derive a key from the token (HKDF-SHA256)");
  }
  std::string key_bytes(reinterpret_cast<const char*>(out.data()), out.size());
  OPENSSL_cleanse(out.data(), out.size());
  return key_bytes;
}

std::string Hmac(const std::string& key, absl::string_view label, absl::string_view data) {
  const std::string message = absl::StrCat(label, data);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac,
           &length) == nullptr) {
    return "";
  }
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(mac), length));
}

// The DER of `cert`'s SubjectPublicKeyInfo ("" on failure).
std::string PublicKeyDer(X509* cert) {
  unsigned char* der = nullptr;
  const int n = i2d_PUBKEY(X509_get0_pubkey(cert), &der);
  if (n <= 0) return "";
  std::string out(reinterpret_cast<const char*>(der), static_cast<std::size_t>(n));
  OPENSSL_free(der);
  return out;
}

// The DER of `cert` ("" on failure).
std::string CertDer(X509* cert) {
  unsigned char* der = nullptr;
  const int n = i2d_X509(cert, &der);
  if (n <= 0) return "";
  std::string out(reinterpret_cast<const char*>(der), static_cast<std::size_t>(n));
  OPENSSL_free(der);
  return out;
}

Owned<X509> ParsePem(std::string_view pem) {
  Owned<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (bio == nullptr) return nullptr;
  return Owned<X509>(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

absl::StatusOr<Owned<EVP_PKEY>> NewKey() {
  Owned<EVP_PKEY_CTX> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr));
  EVP_PKEY* key = nullptr;
  if (ctx == nullptr || EVP_PKEY_keygen_init(ctx.get()) <= 0 ||
      EVP_PKEY_keygen(ctx.get(), &key) <= 0) {
    return OpenSslError("generate the key");
  }
  return Owned<EVP_PKEY>(key);
}

bool AddExtension(X509* cert, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  Owned<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  return ext != nullptr && X509_add_ext(cert, ext.get(), -1) == 1;
}

// A self-signed certificate of `key` for kTokenTlsName, with `extra_san` (may be empty) added to
// its subjectAltName. Only the key, the serial, the validity and the signature differ between
// processes.
absl::StatusOr<Owned<X509>> MakeCert(EVP_PKEY* key, const std::string& extra_san,
                                     X509* issuer = nullptr, EVP_PKEY* issuer_key = nullptr) {
  Owned<X509> cert(X509_new());
  Owned<X509_NAME> name(X509_NAME_new());
  unsigned char serial_bytes[16];
  if (cert == nullptr || name == nullptr ||
      X509_NAME_add_entry_by_txt(name.get(), "CN", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>(kTokenTlsName), -1, -1,
                                 0) != 1 ||
      RAND_bytes(serial_bytes, sizeof(serial_bytes)) != 1) {
    return OpenSslError("build a certificate");
  }
  serial_bytes[0] &= 0x7f;  // a positive serial
  BIGNUM* serial = BN_bin2bn(serial_bytes, sizeof(serial_bytes), nullptr);
  const bool serial_ok =
      serial != nullptr && BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert.get())) != nullptr;
  BN_free(serial);
  std::string san = absl::StrCat("DNS:", kTokenTlsName);
  if (!extra_san.empty()) absl::StrAppend(&san, ",", extra_san);
  if (!serial_ok || X509_set_version(cert.get(), 2) != 1 ||
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), -24L * 3600) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), kCertValidSeconds) == nullptr ||
      X509_set_subject_name(cert.get(), name.get()) != 1 ||
      X509_set_issuer_name(cert.get(),
                           issuer != nullptr ? X509_get_subject_name(issuer) : name.get()) != 1 ||
      X509_set_pubkey(cert.get(), key) != 1 ||
      !AddExtension(cert.get(), NID_basic_constraints, "critical,CA:FALSE") ||
      !AddExtension(cert.get(), NID_key_usage, "critical,digitalSignature") ||
      !AddExtension(cert.get(), NID_ext_key_usage, "serverAuth,clientAuth") ||
      !AddExtension(cert.get(), NID_subject_alt_name, san) ||
      X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, nullptr) <= 0) {
    return OpenSslError("build a certificate");
  }
  return cert;
}

// The public client CA: every client certificate is signed by it because gRPC 1.51's TLS server
// refuses a client certificate that does not chain to its roots (its "don't verify" request type
// still verifies). Its key comes from a fixed, published seed: it is NOT a secret and proves
// nothing; anyone can sign with it. What a server checks is the proof URI (VerifyClientProof).
struct PublicCa {
  Owned<EVP_PKEY> key;
  Owned<X509> cert;
  std::string pem;
};

absl::StatusOr<Owned<X509>> MakePublicCaCert(EVP_PKEY* key) {
  Owned<X509> cert(X509_new());
  Owned<X509_NAME> name(X509_NAME_new());
  if (cert == nullptr || name == nullptr ||
      X509_NAME_add_entry_by_txt(name.get(), "CN", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>(kPublicCaName), -1, -1,
                                 0) != 1 ||
      X509_set_version(cert.get(), 2) != 1 ||
      ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1) != 1 ||
      ASN1_TIME_set_string_X509(X509_getm_notBefore(cert.get()), "20000101000000Z") != 1 ||
      ASN1_TIME_set_string_X509(X509_getm_notAfter(cert.get()), "99991231235959Z") != 1 ||
      X509_set_subject_name(cert.get(), name.get()) != 1 ||
      X509_set_issuer_name(cert.get(), name.get()) != 1 || X509_set_pubkey(cert.get(), key) != 1 ||
      !AddExtension(cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      !AddExtension(cert.get(), NID_key_usage, "critical,keyCertSign") ||
      X509_sign(cert.get(), key, nullptr) <= 0) {
    return OpenSslError("build the public client CA");
  }
  return cert;
}

template <typename Write>
absl::StatusOr<std::string> ToPem(Write write, absl::string_view what) {
  Owned<BIO> bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || write(bio.get()) != 1) return OpenSslError(absl::StrCat("write ", what));
  std::string out;
  char buffer[1024];
  int n = 0;
  while ((n = BIO_read(bio.get(), buffer, sizeof(buffer))) > 0) {
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

absl::StatusOr<std::string> CertPem(X509* cert) {
  return ToPem([cert](BIO* bio) { return PEM_write_bio_X509(bio, cert); }, "certificate");
}

// The proof URI a client certificate carries ("" when it has none).
std::string ProofUri(X509* cert) {
  Owned<GENERAL_NAMES> names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  if (names == nullptr) return "";
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type != GEN_URI) continue;
    const ASN1_IA5STRING* uri = name->d.uniformResourceIdentifier;
    std::string text(reinterpret_cast<const char*>(ASN1_STRING_get0_data(uri)),
                     static_cast<std::size_t>(ASN1_STRING_length(uri)));
    if (text.rfind(kClientProofUri, 0) == 0) return text.substr(sizeof(kClientProofUri) - 1);
  }
  return "";
}

absl::StatusOr<std::shared_ptr<const TokenTls>> MakeTokenTls(const std::string& token) {
  auto out = std::make_shared<TokenTls>();
  absl::StatusOr<std::string> mac_key = Hkdf(token, kMacInfo);
  absl::StatusOr<std::string> proof_key = Hkdf(token, kProofInfo);
  if (!mac_key.ok()) return mac_key.status();
  if (!proof_key.ok()) return proof_key.status();
  out->mac_key = *std::move(mac_key);
  out->proof_key = *std::move(proof_key);
  absl::StatusOr<Owned<EVP_PKEY>> key = NewKey();
  if (!key.ok()) return key.status();
  absl::StatusOr<Owned<X509>> server = MakeCert(key->get(), "");
  if (!server.ok()) return server.status();
  // The client certificate's proof is over the public key, which both certificates share.
  const std::string mac = Hmac(out->mac_key, kClientProofUri, PublicKeyDer(server->get()));
  if (mac.empty()) return OpenSslError("compute the client proof");
  static absl::StatusOr<std::shared_ptr<const PublicCa>>* public_ca = [] {
    auto* made = new absl::StatusOr<std::shared_ptr<const PublicCa>>(
        absl::InternalError("public client CA"));
    absl::StatusOr<std::string> seed = Hkdf(kPublicCaSeed, "ed25519 seed");
    if (!seed.ok()) return (*made = seed.status(), made);
    auto ca = std::make_shared<PublicCa>();
    ca->key.reset(EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr,
                                               reinterpret_cast<const unsigned char*>(seed->data()),
                                               seed->size()));
    if (ca->key == nullptr) return (*made = OpenSslError("make the public CA key"), made);
    absl::StatusOr<Owned<X509>> cert = MakePublicCaCert(ca->key.get());
    if (!cert.ok()) return (*made = cert.status(), made);
    ca->cert = *std::move(cert);
    absl::StatusOr<std::string> pem = CertPem(ca->cert.get());
    if (!pem.ok()) return (*made = pem.status(), made);
    ca->pem = *std::move(pem);
    *made = std::shared_ptr<const PublicCa>(std::move(ca));
    return made;
  }();
  if (!public_ca->ok()) return public_ca->status();
  const PublicCa& ca = ***public_ca;
  out->client_ca_pem = ca.pem;
  absl::StatusOr<Owned<X509>> client =
      MakeCert(key->get(), absl::StrCat("URI:", kClientProofUri, mac), ca.cert.get(), ca.key.get());
  if (!client.ok()) return client.status();
  absl::StatusOr<std::string> server_pem = CertPem(server->get());
  absl::StatusOr<std::string> client_pem = CertPem(client->get());
  EVP_PKEY* raw = key->get();
  absl::StatusOr<std::string> key_pem = ToPem(
      [raw](BIO* bio) {
        return PEM_write_bio_PrivateKey(bio, raw, nullptr, nullptr, 0, nullptr, nullptr);
      },
      "key");
  if (!server_pem.ok()) return server_pem.status();
  if (!client_pem.ok()) return client_pem.status();
  if (!key_pem.ok()) return key_pem.status();
  out->server_cert_pem = *std::move(server_pem);
  out->client_cert_pem = *std::move(client_pem);
  out->key_pem = *std::move(key_pem);
  out->own_proof = ServerProof(*out, out->client_cert_pem);
  if (out->own_proof.empty()) return OpenSslError("compute the server proof");
  return out;
}

}  // namespace

absl::Status VerifyClientProof(const TokenTls& tls, std::string_view pem) {
  Owned<X509> cert = ParsePem(pem);
  ERR_clear_error();
  if (cert == nullptr) return absl::UnauthenticatedError("the client certificate is unreadable");
  const std::string given = ProofUri(cert.get());
  if (given.empty()) {
    return absl::UnauthenticatedError(absl::StrCat(
        "the client certificate carries no proof of the token (a stranger, or an accel-launch "
        "older than transport v",
        kTransportVersion, ")"));
  }
  const std::string expected = Hmac(tls.mac_key, kClientProofUri, PublicKeyDer(cert.get()));
  if (expected.empty() || given.size() != expected.size() ||
      CRYPTO_memcmp(given.data(), expected.data(), expected.size()) != 0) {
    return absl::UnauthenticatedError(
        "the client certificate's proof is not of this job's token (a wrong token there, or "
        "another job's certificate)");
  }
  return absl::OkStatus();
}

std::string PublicKeyDerOf(std::string_view pem) {
  Owned<X509> cert = ParsePem(pem);
  ERR_clear_error();
  return cert == nullptr ? "" : PublicKeyDer(cert.get());
}

std::string ServerProof(const TokenTls& tls, std::string_view client_pem) {
  Owned<X509> cert = ParsePem(client_pem);
  ERR_clear_error();
  if (cert == nullptr) return "";
  const std::string der = CertDer(cert.get());
  return der.empty() ? "" : Hmac(tls.proof_key, kServerProofKey, der);
}

absl::StatusOr<std::shared_ptr<const TokenTls>> TokenTlsFor(const std::string& token) {
  if (token.empty()) return absl::InvalidArgumentError("token TLS: the token is empty");
  // Keyed by SHA-256(salt, token), so the cache holds no extra copy of the secret.
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_length = 0;
  const std::string salted = absl::StrCat(kHkdfSalt, token);
  if (EVP_Digest(salted.data(), salted.size(), digest, &digest_length, EVP_sha256(), nullptr) !=
      1) {
    return OpenSslError("hash the token");
  }
  const std::string key(reinterpret_cast<const char*>(digest), digest_length);
  static absl::Mutex mu(absl::kConstInit);
  static auto* cache = new std::map<std::string, std::shared_ptr<const TokenTls>>();
  absl::MutexLock lock(&mu);
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  absl::StatusOr<std::shared_ptr<const TokenTls>> made = MakeTokenTls(token);
  if (!made.ok()) return made.status();
  cache->emplace(key, *made);
  return made;
}

}  // namespace accel::rendezvous
