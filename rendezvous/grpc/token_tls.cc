#include "rendezvous/grpc/token_tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <array>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace accel::rendezvous {
namespace {

// Changing any of these changes every job's CA: processes of different versions would refuse
// each other (the join's version check would otherwise say so).
constexpr char kHkdfSalt[] = "accel-launch rendezvous token CA";
constexpr char kHkdfInfo[] = "ed25519 seed v1";
constexpr char kCaName[] = "accel-launch job CA";
constexpr long kLeafValidSeconds = 20L * 365 * 24 * 3600;  // ephemeral: outlives any job

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(X509_NAME* p) const { X509_NAME_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
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

absl::StatusOr<Owned<EVP_PKEY>> DeriveCaKey(const std::string& token) {
  Owned<EVP_PKEY_CTX> kdf(EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr));
  std::array<unsigned char, 32> seed{};
  std::size_t length = seed.size();
  const auto* salt = reinterpret_cast<const unsigned char*>(kHkdfSalt);
  const auto* info = reinterpret_cast<const unsigned char*>(kHkdfInfo);
  const auto* key = reinterpret_cast<const unsigned char*>(token.data());
  if (kdf == nullptr || EVP_PKEY_derive_init(kdf.get()) <= 0 ||
      EVP_PKEY_CTX_set_hkdf_md(kdf.get(), EVP_sha256()) <= 0 ||
      EVP_PKEY_CTX_set1_hkdf_salt(kdf.get(), salt, sizeof(kHkdfSalt) - 1) <= 0 ||
      EVP_PKEY_CTX_set1_hkdf_key(kdf.get(), key, static_cast<int>(token.size())) <= 0 ||
      EVP_PKEY_CTX_add1_hkdf_info(kdf.get(), info, sizeof(kHkdfInfo) - 1) <= 0 ||
      EVP_PKEY_derive(kdf.get(), seed.data(), &length) <= 0 || length != seed.size()) {
    return OpenSslError("derive the CA key (HKDF-SHA256)");
  }
  Owned<EVP_PKEY> ca(
      EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, seed.data(), seed.size()));
  OPENSSL_cleanse(seed.data(), seed.size());
  if (ca == nullptr) return OpenSslError("make the Ed25519 CA key");
  return ca;
}

absl::StatusOr<Owned<EVP_PKEY>> NewLeafKey() {
  Owned<EVP_PKEY_CTX> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr));
  EVP_PKEY* key = nullptr;
  if (ctx == nullptr || EVP_PKEY_keygen_init(ctx.get()) <= 0 ||
      EVP_PKEY_keygen(ctx.get(), &key) <= 0) {
    return OpenSslError("generate the leaf key");
  }
  return Owned<EVP_PKEY>(key);
}

Owned<X509_NAME> Name(const char* common_name) {
  Owned<X509_NAME> name(X509_NAME_new());
  if (name == nullptr || X509_NAME_add_entry_by_txt(
                             name.get(), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name), -1, -1, 0) != 1) {
    return nullptr;
  }
  return name;
}

// Adds extension `nid` = `value` (OpenSSL's config syntax) to `cert`, issued by `issuer`.
bool AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  Owned<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  return ext != nullptr && X509_add_ext(cert, ext.get(), -1) == 1;
}

// The CA certificate: every field fixed, so every process builds the same bytes.
absl::StatusOr<Owned<X509>> MakeCaCert(EVP_PKEY* ca_key) {
  Owned<X509> cert(X509_new());
  Owned<X509_NAME> name = Name(kCaName);
  if (cert == nullptr || name == nullptr || X509_set_version(cert.get(), 2) != 1 ||
      ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1) != 1 ||
      ASN1_TIME_set_string_X509(X509_getm_notBefore(cert.get()), "20000101000000Z") != 1 ||
      ASN1_TIME_set_string_X509(X509_getm_notAfter(cert.get()), "99991231235959Z") != 1 ||
      X509_set_subject_name(cert.get(), name.get()) != 1 ||
      X509_set_issuer_name(cert.get(), name.get()) != 1 ||
      X509_set_pubkey(cert.get(), ca_key) != 1 ||
      !AddExtension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      !AddExtension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign") ||
      !AddExtension(cert.get(), cert.get(), NID_subject_key_identifier, "hash") ||
      X509_sign(cert.get(), ca_key, nullptr) <= 0) {
    return OpenSslError("build the CA certificate");
  }
  return cert;
}

absl::StatusOr<Owned<X509>> MakeLeafCert(EVP_PKEY* leaf_key, X509* ca, EVP_PKEY* ca_key) {
  Owned<X509> cert(X509_new());
  Owned<X509_NAME> name = Name(kTokenTlsName);
  unsigned char serial_bytes[16];
  if (cert == nullptr || name == nullptr || RAND_bytes(serial_bytes, sizeof(serial_bytes)) != 1) {
    return OpenSslError("build the leaf certificate");
  }
  serial_bytes[0] &= 0x7f;  // a positive serial
  BIGNUM* serial = BN_bin2bn(serial_bytes, sizeof(serial_bytes), nullptr);
  const bool serial_ok =
      serial != nullptr && BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert.get())) != nullptr;
  BN_free(serial);
  const std::string san = absl::StrCat("DNS:", kTokenTlsName);
  if (!serial_ok || X509_set_version(cert.get(), 2) != 1 ||
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), -24L * 3600) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), kLeafValidSeconds) == nullptr ||
      X509_set_subject_name(cert.get(), name.get()) != 1 ||
      X509_set_issuer_name(cert.get(), X509_get_subject_name(ca)) != 1 ||
      X509_set_pubkey(cert.get(), leaf_key) != 1 ||
      !AddExtension(cert.get(), ca, NID_basic_constraints, "critical,CA:FALSE") ||
      !AddExtension(cert.get(), ca, NID_key_usage, "critical,digitalSignature") ||
      !AddExtension(cert.get(), ca, NID_ext_key_usage, "serverAuth,clientAuth") ||
      !AddExtension(cert.get(), ca, NID_subject_alt_name, san.c_str()) ||
      !AddExtension(cert.get(), ca, NID_authority_key_identifier, "keyid:always") ||
      X509_sign(cert.get(), ca_key, nullptr) <= 0) {
    return OpenSslError("build the leaf certificate");
  }
  return cert;
}

// Returns what `write` put into a memory BIO.
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

absl::StatusOr<std::shared_ptr<const TokenTls>> MakeTokenTls(const std::string& token) {
  absl::StatusOr<Owned<EVP_PKEY>> ca_key = DeriveCaKey(token);
  if (!ca_key.ok()) return ca_key.status();
  absl::StatusOr<Owned<X509>> ca = MakeCaCert(ca_key->get());
  if (!ca.ok()) return ca.status();
  absl::StatusOr<Owned<EVP_PKEY>> leaf_key = NewLeafKey();
  if (!leaf_key.ok()) return leaf_key.status();
  absl::StatusOr<Owned<X509>> leaf = MakeLeafCert(leaf_key->get(), ca->get(), ca_key->get());
  if (!leaf.ok()) return leaf.status();
  auto out = std::make_shared<TokenTls>();
  absl::StatusOr<std::string> ca_pem = CertPem(ca->get());
  absl::StatusOr<std::string> cert_pem = CertPem(leaf->get());
  EVP_PKEY* key = leaf_key->get();
  absl::StatusOr<std::string> key_pem = ToPem(
      [key](BIO* bio) {
        return PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
      },
      "leaf key");
  if (!ca_pem.ok()) return ca_pem.status();
  if (!cert_pem.ok()) return cert_pem.status();
  if (!key_pem.ok()) return key_pem.status();
  out->ca_pem = *std::move(ca_pem);
  out->cert_pem = *std::move(cert_pem);
  out->key_pem = *std::move(key_pem);
  return out;
}

}  // namespace

absl::StatusOr<std::string> TokenCaPem(const std::string& token) {
  if (token.empty()) return absl::InvalidArgumentError("token TLS: the token is empty");
  absl::StatusOr<Owned<EVP_PKEY>> ca_key = DeriveCaKey(token);
  if (!ca_key.ok()) return ca_key.status();
  absl::StatusOr<Owned<X509>> ca = MakeCaCert(ca_key->get());
  if (!ca.ok()) return ca.status();
  return CertPem(ca->get());
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
