// A TCP proxy for tests: 127.0.0.1:port() forwards to 127.0.0.1:target.
// It can cut a process off from a server the way a network does: Freeze()
// passes no more bytes but keeps every connection open (a partition: the
// peer sees silence, no error), FreezeAnswers() passes requests on but
// holds the answers back, Cut() closes every connection. Recorded() is
// every byte it passed, both ways (what someone on the wire would see).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace muster::testing {

class TcpProxy {
 public:
  explicit TcpProxy(int target_port) : target_(target_port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a = Loopback(0);
    socklen_t len = sizeof(a);
    // A proxy that could not listen has port 0, on which its test fails.
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 && ::listen(listener_, 64) == 0 &&
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port_ = ntohs(a.sin_port);
    }
    if (::pipe(wake_) != 0) wake_[0] = wake_[1] = -1;
    thread_ = std::thread([this] { Loop(); });
  }
  ~TcpProxy() {
    stop_ = true;
    Wake();
    thread_.join();
    for (const Pair& p : pairs_) {
      ::close(p.client);
      ::close(p.server);
    }
    ::close(listener_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

  int port() const { return port_; }
  void Freeze() { Set(true, true); }
  void FreezeAnswers() { Set(false, true); }
  void Thaw() { Set(false, false); }
  std::string Recorded() {
    std::lock_guard<std::mutex> lock(recorded_mu_);
    return recorded_;
  }
  void Cut() {
    cut_ = true;
    Wake();
    while (cut_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

 private:
  struct Pair {
    int client, server;
  };
  static sockaddr_in Loopback(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    return a;
  }
  void Set(bool requests, bool answers) {
    hold_requests_ = requests;
    hold_answers_ = answers;
    Wake();
  }
  void Wake() { (void)!::write(wake_[1], "x", 1); }
  bool Pass(int from, int to) {
    char buf[65536];
    const ssize_t n = ::read(from, buf, sizeof(buf));
    if (n <= 0) return false;
    {
      std::lock_guard<std::mutex> lock(recorded_mu_);
      recorded_.append(buf, static_cast<size_t>(n));
    }
    for (ssize_t off = 0; off < n;) {
      const ssize_t w = ::write(to, buf + off, static_cast<size_t>(n - off));
      if (w <= 0) return false;
      off += w;
    }
    return true;
  }
  void Loop() {
    while (!stop_) {
      if (cut_) {
        for (const Pair& p : pairs_) {
          ::close(p.client);
          ::close(p.server);
        }
        pairs_.clear();
        cut_ = false;
      }
      std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
      const bool requests = !hold_requests_, answers = !hold_answers_;
      for (const Pair& p : pairs_) {
        fds.push_back({p.client, static_cast<short>(requests ? POLLIN : 0), 0});
        fds.push_back({p.server, static_cast<short>(answers ? POLLIN : 0), 0});
      }
      const size_t polled = pairs_.size();  // an accept below adds one not in `fds`
      if (::poll(fds.data(), fds.size(), 1000) <= 0) continue;
      if (fds[0].revents) {
        char drain[64];
        (void)!::read(wake_[0], drain, sizeof(drain));
      }
      if (fds[1].revents & POLLIN) {
        const int c = ::accept(listener_, nullptr, nullptr);
        const int s = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in t = Loopback(target_);
        if (c >= 0 && ::connect(s, reinterpret_cast<sockaddr*>(&t), sizeof(t)) == 0) {
          pairs_.push_back({c, s});
        } else {
          if (c >= 0) ::close(c);
          ::close(s);
        }
      }
      std::vector<Pair> alive;
      for (size_t i = polled; i < pairs_.size(); ++i) alive.push_back(pairs_[i]);
      for (size_t i = 0; i < polled; ++i) {
        const pollfd& c = fds[2 + 2 * i];
        const pollfd& s = fds[3 + 2 * i];
        bool ok = true;
        if (c.revents & (POLLIN | POLLHUP | POLLERR)) ok = Pass(pairs_[i].client, pairs_[i].server);
        if (ok && (s.revents & (POLLIN | POLLHUP | POLLERR))) ok = Pass(pairs_[i].server, pairs_[i].client);
        if (ok) {
          alive.push_back(pairs_[i]);
        } else {
          ::close(pairs_[i].client);
          ::close(pairs_[i].server);
        }
      }
      pairs_ = std::move(alive);
    }
  }

  std::mutex recorded_mu_;
  std::string recorded_;  // guarded by recorded_mu_
  const int target_;
  int listener_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false}, cut_{false}, hold_requests_{false}, hold_answers_{false};
  std::vector<Pair> pairs_;  // the loop thread's
  std::thread thread_;
};

}  // namespace muster::testing
