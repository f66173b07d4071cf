// ShellChannel: the encrypted, mutually authenticated stream between
// `muster run --interactive` and the shell relay inside its job.
//
// Both ends know one 256-bit key: the CLI draws it from the OS's random
// source and gives it to the job as a secret variable (MUSTER_SHELL_KEY),
// which the server stores and shows to nobody. The stream is TLS 1.2 with
// that key as a pre-shared key and an ephemeral ECDH exchange
// (ECDHE-PSK-CHACHA20-POLY1305): only holders of the key complete the
// handshake, in either direction, and a key learned later does not decrypt
// a session recorded earlier. No certificate is needed: a relay on any node
// is authenticated by the key alone. The PSK identity is "job:<id>", so a
// key of another job fails too.
//
// On the stream, frames: a type byte, a 4-byte big-endian length (at most
// kMaxFrame) and the payload.
//   client -> relay: 'O' open (rows, cols: 2 bytes each, then $TERM),
//                    'D' input bytes, 'W' window size (rows, cols),
//                    'E' end of input;
//   relay -> client: 'D' output bytes, 'X' exit (4-byte status: the exit
//                    code, or 128 + the signal that ended the shell).
//
// Thread-safety: none; one thread uses a channel.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace muster::shell {

inline constexpr size_t kMaxFrame = 64 * 1024;

struct Frame {
  char type = 0;
  std::string data;
};

// The 2-byte big-endian pairs of 'O' and 'W' frames.
std::string EncodeSize(uint16_t rows, uint16_t cols);
bool DecodeSize(const std::string& data, uint16_t& rows, uint16_t& cols);

class ShellChannel {
 public:
  ~ShellChannel();
  ShellChannel(const ShellChannel&) = delete;
  ShellChannel& operator=(const ShellChannel&) = delete;

  // Completes the handshake on a connected socket (the channel owns it from
  // now on, also on failure). `key_hex`: 64 hex digits. A peer without the
  // key, or for another job, fails with Unauthenticated.
  static StatusOr<std::unique_ptr<ShellChannel>> Accept(int fd, const std::string& key_hex, int64_t job);
  static StatusOr<std::unique_ptr<ShellChannel>> Connect(int fd, const std::string& key_hex, int64_t job);

  Status Write(char type, const std::string& data);
  // The next frame; Unavailable when the peer closed the stream.
  StatusOr<Frame> Read();
  // Whether decrypted bytes wait in the channel (poll() on fd() would not
  // show them).
  bool Pending() const;
  int fd() const { return fd_; }

 private:
  struct Tls;
  ShellChannel(int fd, std::unique_ptr<Tls> tls);
  static StatusOr<std::unique_ptr<ShellChannel>> Handshake(int fd, const std::string& key_hex, int64_t job,
                                                           bool server);
  Status ReadExactly(char* out, size_t n);

  int fd_;
  std::unique_ptr<Tls> tls_;
};

}  // namespace muster::shell
