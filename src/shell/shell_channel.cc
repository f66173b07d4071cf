#include "shell/shell_channel.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <cstring>

namespace muster::shell {

// The key and PSK identity one handshake checks, reached from the callbacks
// (outside the anonymous namespace: ShellChannel::Tls holds one).
struct PskSecret {
  std::string key;       // 32 raw bytes
  std::string identity;  // "job:<id>"
};

namespace {

bool FromHex(const std::string& hex, std::string& out) {
  if (hex.size() != 64) return false;
  out.clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    int v = 0;
    for (size_t k = i; k < i + 2; ++k) {
      const char c = hex[k];
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return false;
      v = v * 16 + d;
    }
    out.push_back(static_cast<char>(v));
  }
  return true;
}

unsigned int ServerPsk(SSL* ssl, const char* identity, unsigned char* psk, unsigned int max_len) {
  const auto* s = static_cast<const PskSecret*>(SSL_get_app_data(ssl));
  if (s == nullptr || identity == nullptr || s->identity != identity || s->key.size() > max_len) return 0;
  std::memcpy(psk, s->key.data(), s->key.size());
  return static_cast<unsigned int>(s->key.size());
}

unsigned int ClientPsk(SSL* ssl, const char* /*hint*/, char* identity, unsigned int max_identity, unsigned char* psk,
                       unsigned int max_len) {
  const auto* s = static_cast<const PskSecret*>(SSL_get_app_data(ssl));
  if (s == nullptr || s->identity.size() + 1 > max_identity || s->key.size() > max_len) return 0;
  std::memcpy(identity, s->identity.c_str(), s->identity.size() + 1);
  std::memcpy(psk, s->key.data(), s->key.size());
  return static_cast<unsigned int>(s->key.size());
}

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "connection closed";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

}  // namespace

struct ShellChannel::Tls {
  SSL_CTX* ctx = nullptr;
  SSL* ssl = nullptr;
  PskSecret secret;
  ~Tls() {
    if (ssl != nullptr) SSL_free(ssl);
    if (ctx != nullptr) SSL_CTX_free(ctx);
  }
};

std::string EncodeSize(uint16_t rows, uint16_t cols) {
  return {static_cast<char>(rows >> 8), static_cast<char>(rows & 0xff), static_cast<char>(cols >> 8),
          static_cast<char>(cols & 0xff)};
}

bool DecodeSize(const std::string& data, uint16_t& rows, uint16_t& cols) {
  if (data.size() < 4) return false;
  auto u = [&](size_t i) { return static_cast<uint16_t>(static_cast<unsigned char>(data[i])); };
  rows = static_cast<uint16_t>(u(0) << 8 | u(1));
  cols = static_cast<uint16_t>(u(2) << 8 | u(3));
  return true;
}

ShellChannel::ShellChannel(int fd, std::unique_ptr<Tls> tls) : fd_(fd), tls_(std::move(tls)) {}

ShellChannel::~ShellChannel() {
  if (tls_ && tls_->ssl != nullptr) SSL_shutdown(tls_->ssl);
  tls_.reset();
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<std::unique_ptr<ShellChannel>> ShellChannel::Accept(int fd, const std::string& key_hex, int64_t job) {
  return Handshake(fd, key_hex, job, /*server=*/true);
}

StatusOr<std::unique_ptr<ShellChannel>> ShellChannel::Connect(int fd, const std::string& key_hex, int64_t job) {
  return Handshake(fd, key_hex, job, /*server=*/false);
}

StatusOr<std::unique_ptr<ShellChannel>> ShellChannel::Handshake(int fd, const std::string& key_hex, int64_t job,
                                                                bool server) {
  auto tls = std::make_unique<Tls>();
  // The channel owns fd from here, whatever happens.
  std::unique_ptr<ShellChannel> channel(new ShellChannel(fd, nullptr));
  if (!FromHex(key_hex, tls->secret.key)) return InvalidArgument("must be 64 hex digits", "MUSTER_SHELL_KEY");
  tls->secret.identity = "job:" + std::to_string(job);
  tls->ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (tls->ctx == nullptr) return Status(StatusCode::kInternal, "TLS: " + OpenSslError());
  SSL_CTX_set_min_proto_version(tls->ctx, TLS1_2_VERSION);
  SSL_CTX_set_max_proto_version(tls->ctx, TLS1_2_VERSION);
  if (SSL_CTX_set_cipher_list(tls->ctx, "ECDHE-PSK-CHACHA20-POLY1305") != 1) {
    return Status(StatusCode::kInternal, "TLS: no ECDHE-PSK-CHACHA20-POLY1305 here: " + OpenSslError());
  }
  if (server) {
    SSL_CTX_set_psk_server_callback(tls->ctx, ServerPsk);
  } else {
    SSL_CTX_set_psk_client_callback(tls->ctx, ClientPsk);
  }
  tls->ssl = SSL_new(tls->ctx);
  if (tls->ssl == nullptr || SSL_set_fd(tls->ssl, fd) != 1)
    return Status(StatusCode::kInternal, "TLS: " + OpenSslError());
  SSL_set_app_data(tls->ssl, &tls->secret);
  ERR_clear_error();
  const int rc = server ? SSL_accept(tls->ssl) : SSL_connect(tls->ssl);
  if (rc != 1) {
    return Status(
        StatusCode::kUnauthenticated,
        "shell handshake failed (the peer does not hold this job's key, or is not a Muster shell): " + OpenSslError());
  }
  channel->tls_ = std::move(tls);
  return channel;
}

Status ShellChannel::Write(char type, const std::string& data) {
  if (data.size() > kMaxFrame) return InvalidArgument("frame of " + std::to_string(data.size()) + " bytes");
  std::string frame(5, '\0');
  frame[0] = type;
  const auto n = static_cast<uint32_t>(data.size());
  for (int i = 0; i < 4; ++i) frame[1 + i] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
  frame += data;
  size_t done = 0;
  while (done < frame.size()) {
    const int w = SSL_write(tls_->ssl, frame.data() + done, static_cast<int>(frame.size() - done));
    if (w <= 0) return Unavailable("shell connection lost: " + OpenSslError());
    done += static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status ShellChannel::ReadExactly(char* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    const int r = SSL_read(tls_->ssl, out + done, static_cast<int>(n - done));
    if (r <= 0) return Unavailable("shell connection closed: " + OpenSslError());
    done += static_cast<size_t>(r);
  }
  return Status::Ok();
}

StatusOr<Frame> ShellChannel::Read() {
  char header[5];
  RETURN_IF_ERROR(ReadExactly(header, sizeof header));
  uint32_t n = 0;
  for (int i = 1; i < 5; ++i) n = n << 8 | static_cast<unsigned char>(header[i]);
  if (n > kMaxFrame) return InvalidArgument("shell frame of " + std::to_string(n) + " bytes (at most 65536)");
  Frame f;
  f.type = header[0];
  f.data.resize(n);
  if (n > 0) RETURN_IF_ERROR(ReadExactly(f.data.data(), n));
  return f;
}

bool ShellChannel::Pending() const { return SSL_pending(tls_->ssl) > 0; }

}  // namespace muster::shell
