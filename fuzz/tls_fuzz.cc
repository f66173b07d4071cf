// libFuzzer target for the bytes a TLS peer sends before it is trusted:
// what a client sends to the server's TLS port (src/http/tls.h, as the
// event loop reads it), and what a "server" answers a client that pins a
// key (the server reading an agent's log port). OpenSSL parses the records;
// this checks how our wrapper turns whatever happens into results.
//
// The first byte picks the side (even: the server's, odd: a pinning
// client's); the rest arrives on a socket pair, all at once, then the end
// of the stream.
//
// Promises checked, aborting when one breaks:
//   1. nothing crashes, throws or hangs;
//   2. a call returns bytes, 0 (the end), or -1 with errno EAGAIN (it waits)
//      or EPROTO (a TLS failure) with a message without raw control
//      characters, or ECONNRESET/EPIPE from the socket;
//   3. a pinning client never reports a finished handshake or application
//      bytes: the input cannot hold the pinned key's signature, so nothing
//      it sends is trusted;
//   4. the server gives no application bytes before its handshake is done.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz_checks.h"
#include "http/tls.h"

namespace {

using muster::fuzz::Fail;
using muster::http::TlsStream;

const muster::http::SelfSignedCertificate& Certificate() {
  static const auto made = muster::http::MakeSelfSignedCertificate("fuzz", 1);
  if (!made.ok()) Fail("cannot make a certificate", made.status().ToString());
  return *made;
}

void CheckResult(ssize_t n, const TlsStream& s) {
  if (n >= 0) return;
  if (errno == EAGAIN || errno == ECONNRESET || errno == EPIPE) return;
  if (errno != EPROTO) Fail("unexpected errno", std::to_string(errno));
  for (unsigned char c : s.error()) {
    if (c < 0x20 || c == 0x7F) Fail("raw control character in TLS error", s.error());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > (48 << 10)) return 0;  // within a socket pair's buffer
  const bool client = data[0] & 1;
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) return 0;
  // The peer's bytes, then its end of the stream.
  if (size > 1 && ::send(fds[1], data + 1, size - 1, MSG_NOSIGNAL) != static_cast<ssize_t>(size - 1)) {
    ::close(fds[0]);
    ::close(fds[1]);
    return 0;
  }
  ::shutdown(fds[1], SHUT_WR);

  std::unique_ptr<TlsStream> stream;
  if (client) {
    static const auto ctx = [] {
      // Another key's pin: the input can never prove it holds it.
      const auto other = muster::http::MakeSelfSignedCertificate("other", 1);
      return muster::http::TlsClientContext::Make({"", other->pin});
    }();
    if (!ctx.ok()) Fail("client context", ctx.status().ToString());
    auto s = TlsStream::Connect(**ctx, fds[0], "node-1");
    if (!s.ok()) Fail("connect", s.status().ToString());
    stream = std::move(*s);
  } else {
    static const auto ctx = muster::http::TlsServerContext::FromPem(Certificate().cert_pem, Certificate().key_pem);
    if (!ctx.ok()) Fail("server context", ctx.status().ToString());
    auto s = TlsStream::Accept(**ctx, fds[0]);
    if (!s.ok()) Fail("accept", s.status().ToString());
    stream = std::move(*s);
  }

  char buf[16 << 10];
  for (int round = 0; round < 64; ++round) {
    if (client) {
      const ssize_t h = stream->Handshake();
      if (h == 1) Fail("a pinning client trusted a server without the pinned key", "");
      CheckResult(h, *stream);
      if (h < 0 && errno != EAGAIN) break;
    }
    const ssize_t n = stream->Read(buf, sizeof buf);
    CheckResult(n, *stream);
    if (n > 0 && client) Fail("a pinning client read application bytes from an unverified server", "");
    if (n > 0 && !stream->handshake_done()) Fail("application bytes before the handshake", "");
    if (n == 0 || (n < 0 && errno != EAGAIN)) break;
    if (n < 0 && !stream->wants_write()) break;  // waits for bytes that will not come
  }
  stream->Shutdown();
  stream.reset();
  ::close(fds[0]);
  ::close(fds[1]);
  return 0;
}
