#include "http/tls.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace muster::http {
namespace {

// The reasons OpenSSL queued on this thread, oldest first; clears the queue.
std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    // "error:0A000086:SSL routines::certificate verify failed": the reason is the last part.
    std::string_view text(buf);
    const size_t colon = text.rfind(':');
    if (colon != std::string_view::npos && colon + 1 < text.size()) text.remove_prefix(colon + 1);
    if (!out.empty()) out += "; ";
    out += text;
  }
  return out.empty() ? "unknown TLS error" : out;
}

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;

BioPtr MemoryBio(std::string_view text) { return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size()))); }

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

// "sha256:<hex>" of the certificate's SubjectPublicKeyInfo (DER).
std::string PinOf(X509* cert) {
  unsigned char* der = nullptr;
  const int len = i2d_PUBKEY(X509_get0_pubkey(cert), &der);
  if (len <= 0) return "";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  EVP_Digest(der, static_cast<size_t>(len), md, &md_len, EVP_sha256(), nullptr);
  OPENSSL_free(der);
  std::string out = "sha256:";
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned int i = 0; i < md_len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

bool ValidPin(std::string_view pin) {
  if (pin.size() != 7 + 64 || pin.substr(0, 7) != "sha256:") return false;
  for (char c : pin.substr(7)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// What every context of ours shares: TLS 1.2 at least, no renegotiation,
// partial writes from a buffer that may move (the server appends answers
// to a buffer being sent), buffers given back while a connection idles.
void CommonSettings(SSL_CTX* ctx) {
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  // Records are read as much at a time as the socket holds (fewer reads,
  // and Drained() can tell when it is empty).
  SSL_CTX_set_read_ahead(ctx, 1);
}

// A socket BIO that sends with MSG_NOSIGNAL: OpenSSL's own writes with
// write(2), and a peer that has gone would raise SIGPIPE, which ends a
// process that does not ignore it (the CLI must not: `muster logs | head`).
// What the BIO holds: the socket, and whether its last read emptied it.
struct Socket {
  int fd = -1;
  bool drained = false;
};

int SocketWrite(BIO* b, const char* data, int len) {
  BIO_clear_retry_flags(b);
  const int fd = static_cast<Socket*>(BIO_get_data(b))->fd;
  const ssize_t n = ::send(fd, data, static_cast<size_t>(len), MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(b);
  return static_cast<int>(n);
}

int SocketRead(BIO* b, char* data, int len) {
  BIO_clear_retry_flags(b);
  Socket* s = static_cast<Socket*>(BIO_get_data(b));
  const ssize_t n = ::recv(s->fd, data, static_cast<size_t>(len), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(b);
  // Less than asked for: nothing more was waiting (read-ahead asks for all
  // its buffer holds).
  s->drained = n < len;
  return static_cast<int>(n);
}

long SocketCtrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

int SocketFree(BIO* b) {
  delete static_cast<Socket*>(BIO_get_data(b));
  BIO_set_data(b, nullptr);
  return 1;
}

const BIO_METHOD* SocketMethod() {
  static const BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "muster socket");
    BIO_meth_set_write(m, SocketWrite);
    BIO_meth_set_read(m, SocketRead);
    BIO_meth_set_ctrl(m, SocketCtrl);
    BIO_meth_set_destroy(m, SocketFree);
    return m;
  }();
  return method;
}

// Puts `fd` under `ssl` through the BIO above; false when out of memory.
bool AttachSocket(SSL* ssl, int fd) {
  BIO* bio = BIO_new(SocketMethod());
  if (bio == nullptr) return false;
  BIO_set_data(bio, new Socket{fd, false});
  BIO_set_init(bio, 1);
  SSL_set_bio(ssl, bio, bio);  // one reference for both directions
  return true;
}

}  // namespace

// --- server context ---------------------------------------------------------

StatusOr<std::shared_ptr<TlsServerContext>> TlsServerContext::FromFiles(const std::string& cert_file,
                                                                        const std::string& key_file) {
  struct stat st {};
  if (::stat(key_file.c_str(), &st) != 0) {
    return InvalidArgument("cannot read the TLS key " + key_file + ": " + std::strerror(errno), "tls.key");
  }
  if (st.st_mode & S_IRWXO) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return InvalidArgument("the TLS key " + key_file + " may be read by others (mode " + mode +
                               "); chmod 600 it (640 for a group such as ssl-cert)",
                           "tls.key");
  }
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return Status(StatusCode::kInternal, "TLS: " + OpenSslErrors());
  std::shared_ptr<TlsServerContext> out(new TlsServerContext(ctx));
  CommonSettings(ctx);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return InvalidArgument("cannot use the TLS certificate " + cert_file + ": " + OpenSslErrors(), "tls.cert");
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return InvalidArgument("cannot use the TLS key " + key_file + ": " + OpenSslErrors(), "tls.key");
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return InvalidArgument("the TLS key " + key_file + " is not the key of the certificate " + cert_file, "tls.key");
  }
  return out;
}

StatusOr<std::shared_ptr<TlsServerContext>> TlsServerContext::FromPem(std::string_view cert_pem,
                                                                      std::string_view key_pem) {
  ERR_clear_error();
  X509Ptr cert(PEM_read_bio_X509(MemoryBio(cert_pem).get(), nullptr, nullptr, nullptr));
  KeyPtr key(PEM_read_bio_PrivateKey(MemoryBio(key_pem).get(), nullptr, nullptr, nullptr));
  if (!cert || !key) return InvalidArgument("TLS: not a PEM certificate and key: " + OpenSslErrors(), "tls");
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return Status(StatusCode::kInternal, "TLS: " + OpenSslErrors());
  std::shared_ptr<TlsServerContext> out(new TlsServerContext(ctx));
  CommonSettings(ctx);
  if (SSL_CTX_use_certificate(ctx, cert.get()) != 1 || SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    return InvalidArgument("TLS: the key does not belong to the certificate: " + OpenSslErrors(), "tls");
  }
  return out;
}

TlsServerContext::~TlsServerContext() { SSL_CTX_free(ctx_); }

// --- client context ---------------------------------------------------------

StatusOr<std::shared_ptr<TlsClientContext>> TlsClientContext::Make(const TlsClientOptions& options) {
  if (!options.pin.empty() && !ValidPin(options.pin)) {
    return InvalidArgument("a TLS pin is \"sha256:\" and 64 lowercase hex digits", "pin");
  }
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return Status(StatusCode::kInternal, "TLS: " + OpenSslErrors());
  std::shared_ptr<TlsClientContext> out(new TlsClientContext(ctx, options.pin));
  CommonSettings(ctx);
  if (!options.pin.empty()) {
    // Trust comes from the pin, checked once the handshake is done and
    // before any byte of a request is sent.
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    return out;
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (!options.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) != 1) {
      return InvalidArgument("cannot read the CA file " + options.ca_file + ": " + OpenSslErrors(), "ca");
    }
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    return Status(StatusCode::kInternal, "TLS: cannot use the system's CA store: " + OpenSslErrors());
  }
  return out;
}

TlsClientContext::~TlsClientContext() { SSL_CTX_free(ctx_); }

// --- stream -----------------------------------------------------------------

StatusOr<std::unique_ptr<TlsStream>> TlsStream::Accept(const TlsServerContext& ctx, int fd) {
  ERR_clear_error();
  SSL* ssl = SSL_new(ctx.get());
  if (ssl == nullptr) return Status(StatusCode::kInternal, "TLS: " + OpenSslErrors());
  std::unique_ptr<TlsStream> s(new TlsStream(ssl, ""));
  if (!AttachSocket(ssl, fd)) return Status(StatusCode::kInternal, "TLS: " + OpenSslErrors());
  SSL_set_accept_state(ssl);
  return s;
}

StatusOr<std::unique_ptr<TlsStream>> TlsStream::Connect(const TlsClientContext& ctx, int fd, const std::string& host) {
  ERR_clear_error();
  SSL* ssl = SSL_new(ctx.get());
  if (ssl == nullptr) return Status(StatusCode::kInternal, "TLS: " + OpenSslErrors());
  std::unique_ptr<TlsStream> s(new TlsStream(ssl, ctx.pin()));
  if (!AttachSocket(ssl, fd)) return Status(StatusCode::kInternal, "TLS: " + OpenSslErrors());
  SSL_set_connect_state(ssl);
  unsigned char addr[16];
  const bool is_ip = inet_pton(AF_INET, host.c_str(), addr) == 1 || inet_pton(AF_INET6, host.c_str(), addr) == 1;
  if (ctx.pin().empty()) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    const int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) : SSL_set1_host(ssl, host.c_str());
    if (ok != 1) return InvalidArgument("TLS: cannot check the certificate against " + host, "server");
  }
  if (!is_ip) SSL_set_tlsext_host_name(ssl, host.c_str());
  return s;
}

TlsStream::~TlsStream() { SSL_free(ssl_); }

bool TlsStream::handshake_done() const { return SSL_is_init_finished(ssl_) == 1; }

bool TlsStream::Drained() const {
  const Socket* s = static_cast<const Socket*>(BIO_get_data(SSL_get_rbio(ssl_)));
  return s->drained && SSL_has_pending(ssl_) == 0;
}

bool TlsStream::PinMatches() {
  if (pin_.empty() || pin_checked_) return true;
  X509* cert = SSL_get0_peer_certificate(ssl_);
  const std::string got = cert != nullptr ? PinOf(cert) : "";
  if (got != pin_) {
    error_ = "the server's certificate is not the one expected (its key is " + (got.empty() ? "missing" : got) +
             ", expected " + pin_ + ")";
    return false;
  }
  pin_checked_ = true;
  return true;
}

ssize_t TlsStream::Result(int rc) {
  wants_write_ = false;
  if (rc > 0) {
    if (!PinMatches()) {
      errno = EPROTO;
      return -1;
    }
    return rc;
  }
  const int saved = errno;
  switch (SSL_get_error(ssl_, rc)) {
    case SSL_ERROR_WANT_READ:
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_WANT_WRITE:
      wants_write_ = true;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_ZERO_RETURN:
      return 0;
    case SSL_ERROR_SYSCALL:
      ERR_clear_error();
      if (saved == 0) return 0;  // the peer closed (without close_notify)
      errno = saved;
      return -1;
    default: {
      // A client that pins a key verifies no chain: its verify result
      // says nothing of why the handshake failed.
      const long verify = pin_.empty() ? SSL_get_verify_result(ssl_) : X509_V_OK;
      error_ = verify != X509_V_OK ? std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify)
                                   : OpenSslErrors();
      ERR_clear_error();
      errno = EPROTO;
      return -1;
    }
  }
}

ssize_t TlsStream::Handshake() {
  ERR_clear_error();
  errno = 0;
  if (handshake_done() && (pin_.empty() || pin_checked_)) return 1;
  return Result(SSL_do_handshake(ssl_));
}

ssize_t TlsStream::Read(char* buf, size_t n) {
  if (!pin_.empty() && !pin_checked_) {
    if (const ssize_t rc = Handshake(); rc != 1) return rc;
  }
  ERR_clear_error();
  errno = 0;
  return Result(SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(n, 1 << 30))));
}

ssize_t TlsStream::Write(const char* buf, size_t n) {
  // A client with a pin: nothing is sent before the pin holds.
  if (!pin_.empty() && !pin_checked_) {
    if (const ssize_t rc = Handshake(); rc != 1) return rc;
  }
  ERR_clear_error();
  errno = 0;
  return Result(SSL_write(ssl_, buf, static_cast<int>(std::min<size_t>(n, 1 << 30))));
}

void TlsStream::Shutdown() {
  ERR_clear_error();
  if (handshake_done()) SSL_shutdown(ssl_);
  ERR_clear_error();
}

// --- certificates -----------------------------------------------------------

StatusOr<SelfSignedCertificate> MakeSelfSignedCertificate(const std::string& common_name, int days) {
  ERR_clear_error();
  KeyPtr key(EVP_EC_gen("P-256"));
  X509Ptr cert(X509_new());
  if (!key || !cert) return Status(StatusCode::kInternal, "TLS: cannot make a key: " + OpenSslErrors());
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return Status(StatusCode::kInternal, "TLS: no random serial");
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_set_version(cert.get(), X509_VERSION_3);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -300);  // clocks a little behind
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(days) * 86400);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                             -1, 0);
  X509_set_issuer_name(cert.get(), name);
  X509_set_pubkey(cert.get(), key.get());
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) {
    return Status(StatusCode::kInternal, "TLS: cannot sign a certificate: " + OpenSslErrors());
  }
  SelfSignedCertificate out;
  BioPtr cert_bio(BIO_new(BIO_s_mem())), key_bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return Status(StatusCode::kInternal, "TLS: cannot write PEM: " + OpenSslErrors());
  }
  out.cert_pem = BioText(cert_bio.get());
  out.key_pem = BioText(key_bio.get());
  out.pin = PinOf(cert.get());
  return out;
}

StatusOr<std::string> PinOfCertificate(std::string_view cert_pem) {
  ERR_clear_error();
  X509Ptr cert(PEM_read_bio_X509(MemoryBio(cert_pem).get(), nullptr, nullptr, nullptr));
  if (!cert) return InvalidArgument("not a PEM certificate: " + OpenSslErrors(), "cert");
  return PinOf(cert.get());
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost") return true;
  const std::string h(host);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

}  // namespace muster::http
