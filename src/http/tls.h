// TLS for http::Server and http::Client (OpenSSL): contexts, one connection
// over a non-blocking socket, and self-signed certificates with pins.
//
// A server context holds a certificate chain and its key, read once from PEM
// files (the key must not be readable by others) or given as PEM text. A
// client context verifies the server one of two ways:
//   - by CA and name: the chain must lead to a CA of `ca_file` (default: the
//     system's store, /etc/ssl/certs) and the certificate must name the host
//     dialled (DNS name or IP address in subjectAltName);
//   - by pin: the certificate's public key must hash to `pin`; no CA and no
//     name. The server pins the certificates its agents make for their log
//     ports (the agent reports the pin over its own verified connection).
// TLS 1.2 is the oldest version spoken, as in Mozilla's "intermediate"
// profile.
//
// TlsStream works like read(2)/send(2) on a non-blocking socket, so that the
// event loop and the blocking client keep their shape: a byte count, 0 at
// the end of the stream, or -1 with errno (EAGAIN: wait, and wants_write()
// says for what; EPROTO: a TLS failure, said by error()). The handshake is
// done by the first Read or Write.
//
//   auto ctx = TlsServerContext::FromFiles("server.crt", "server.key");
//   auto s = TlsStream::Accept(**ctx, fd);
//   ssize_t n = (*s)->Read(buf, sizeof buf);
//
// Thread-safety: a context may be shared by threads once made; a stream is
// used by one thread at a time.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

struct ssl_ctx_st;
struct ssl_st;

namespace muster::http {

class TlsServerContext {
 public:
  // `cert_file`: the certificate, then any intermediates; `key_file`: its
  // private key, mode 0600 or 0640 (never readable by others).
  static StatusOr<std::shared_ptr<TlsServerContext>> FromFiles(const std::string& cert_file,
                                                               const std::string& key_file);
  static StatusOr<std::shared_ptr<TlsServerContext>> FromPem(std::string_view cert_pem, std::string_view key_pem);
  ~TlsServerContext();
  ssl_ctx_st* get() const { return ctx_; }

 private:
  explicit TlsServerContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
};

struct TlsClientOptions {
  std::string ca_file;  // PEM CAs to trust; "": the system's
  std::string pin;      // "sha256:<64 hex>": trust the key with this hash only
};

class TlsClientContext {
 public:
  static StatusOr<std::shared_ptr<TlsClientContext>> Make(const TlsClientOptions& options);
  ~TlsClientContext();
  ssl_ctx_st* get() const { return ctx_; }
  const std::string& pin() const { return pin_; }

 private:
  TlsClientContext(ssl_ctx_st* ctx, std::string pin) : ctx_(ctx), pin_(std::move(pin)) {}
  ssl_ctx_st* ctx_;
  std::string pin_;
};

class TlsStream {
 public:
  // The socket `fd` stays the caller's to close, after the stream.
  static StatusOr<std::unique_ptr<TlsStream>> Accept(const TlsServerContext& ctx, int fd);
  // `host`: the name or address dialled, checked against the certificate
  // (unless the context pins a key) and sent as SNI when a name.
  static StatusOr<std::unique_ptr<TlsStream>> Connect(const TlsClientContext& ctx, int fd, const std::string& host);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // 1 once the handshake is done (and a client's pin holds), else -1 as
  // Read. Read and Write do it when needed; a client does it first, so
  // that nothing is sent to a server that is not the one expected.
  ssize_t Handshake();
  ssize_t Read(char* buf, size_t n);
  ssize_t Write(const char* buf, size_t n);
  // After -1/EAGAIN: whether the stream waits for the socket to take bytes
  // (else for bytes to arrive).
  bool wants_write() const { return wants_write_; }
  bool handshake_done() const;
  // After a Read that gave bytes: whether nothing more is waiting, neither
  // in the stream nor in the socket (as a short read(2) says). An
  // edge-triggered reader may then wait for the next edge.
  bool Drained() const;
  // Sends close_notify, if it can without waiting.
  void Shutdown();
  // Why the last call failed with EPROTO.
  const std::string& error() const { return error_; }

 private:
  TlsStream(ssl_st* ssl, std::string pin) : ssl_(ssl), pin_(std::move(pin)) {}
  ssize_t Result(int rc);
  bool PinMatches();

  ssl_st* ssl_;
  std::string pin_;  // a client's pin, checked once the handshake is done
  bool pin_checked_ = false;
  bool wants_write_ = false;
  std::string error_;
};

// A fresh ECDSA P-256 key and a self-signed certificate for `common_name`,
// valid from now for `days`, with the pin of its key.
struct SelfSignedCertificate {
  std::string cert_pem;
  std::string key_pem;
  std::string pin;
};
StatusOr<SelfSignedCertificate> MakeSelfSignedCertificate(const std::string& common_name, int days);

// The pin ("sha256:<hex>") of the first certificate in PEM text.
StatusOr<std::string> PinOfCertificate(std::string_view cert_pem);

// Whether `host` names this machine's loopback (localhost, 127.0.0.0/8,
// ::1): where plain HTTP is allowed without asking.
bool IsLoopbackHost(std::string_view host);

}  // namespace muster::http
