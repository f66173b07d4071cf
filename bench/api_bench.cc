// Benchmark: the control plane's submit rate and latency, and listing jobs.
//
//   muster_bench_api submit --server URL --clients 8 --jobs 10000
//       N clients, each submitting jobs/N jobs one after another (each with
//       an Idempotency-Key, each acknowledged only once durable); prints
//       throughput and per-request latency p50/p99/max. With --array K each
//       request is an array of K jobs.
//   muster_bench_api ping --server URL --clients 8 --jobs 20000
//       The same clients sending GET /healthz, which does no work: the
//       ceiling of the HTTP stack (client, loopback TCP, server threads).
//   muster_bench_api list --server URL [--iterations 5] [--view summary]
//       GET /v1/jobs page by page (1,000 a page) through everything stored,
//       and one first page; prints the time of each (--view summary: the
//       compact items a table uses).
//
// Wall time with a steady clock; the server runs in its own process. Submit
// and ping clients send prepared requests on kept-alive sockets (one send,
// reads until the answer is whole), so that the load generator's own CPU
// stays small beside the server's on a machine they share. An https://
// server is spoken to over TLS (http/tls.h), verified by $MUSTER_CA.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "http/tls.h"

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(p / 100.0 * v.size() + 0.999999);
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

// One kept-alive HTTP/1.1 connection to http://HOST:PORT.
class Connection {
 public:
  explicit Connection(const std::string& url) {
    tls_ = url.rfind("https://", 0) == 0;
    std::string rest = url.substr(url.find("//") == std::string::npos ? 0 : url.find("//") + 2);
    const size_t colon = rest.rfind(':');
    host_ = rest.substr(0, colon);
    port_ = colon == std::string::npos ? (tls_ ? 443 : 80) : std::stoi(rest.substr(colon + 1));
  }
  ~Connection() { Close(); }
  const std::string& host() const { return host_; }

  // Sends `request` whole and reads one answer; its status, or -1 when the
  // connection failed (it is opened again on the next call).
  int RoundTrip(const std::string& request) {
    if (fd_ < 0 && !Open()) return -1;
    for (size_t sent = 0; sent < request.size();) {
      const ssize_t n = stream_ ? stream_->Write(request.data() + sent, request.size() - sent)
                                : ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return Fail();
      sent += static_cast<size_t>(n);
    }
    in_.clear();
    size_t head_end = std::string::npos;
    size_t length = 0;
    while (true) {
      char buf[16 << 10];
      const ssize_t n = stream_ ? stream_->Read(buf, sizeof buf) : ::read(fd_, buf, sizeof buf);
      if (n <= 0) return Fail();
      in_.append(buf, static_cast<size_t>(n));
      if (head_end == std::string::npos) {
        head_end = in_.find("\r\n\r\n");
        if (head_end == std::string::npos) continue;
        const size_t cl = in_.find("Content-Length: ");
        if (cl != std::string::npos && cl < head_end) length = std::strtoul(in_.c_str() + cl + 16, nullptr, 10);
      }
      if (in_.size() >= head_end + 4 + length) break;
    }
    if (in_.find("Connection: close") < head_end) Close();
    return std::atoi(in_.c_str() + 9);  // "HTTP/1.1 201"
  }

 private:
  bool Open() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port_));
    if (::inet_pton(AF_INET, host_ == "localhost" ? "127.0.0.1" : host_.c_str(), &a.sin_addr) != 1 ||
        ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      Close();
      return false;
    }
    int yes = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    if (!tls_) return true;
    // A blocking socket: each TLS call returns once it has done its part.
    static const auto context = [] {
      muster::http::TlsClientOptions o;
      if (const char* ca = std::getenv("MUSTER_CA")) o.ca_file = ca;
      auto made = muster::http::TlsClientContext::Make(o);
      if (!made.ok()) std::fprintf(stderr, "TLS: %s\n", made.status().message().c_str());
      return made.ok() ? *made : nullptr;
    }();
    if (!context) {
      Close();
      return false;
    }
    auto stream = muster::http::TlsStream::Connect(*context, fd_, host_);
    if (!stream.ok() || (*stream)->Handshake() != 1) {
      if (stream.ok()) std::fprintf(stderr, "TLS handshake: %s\n", (*stream)->error().c_str());
      Close();
      return false;
    }
    stream_ = std::move(*stream);
    return true;
  }
  int Fail() {
    Close();
    return -1;
  }
  void Close() {
    stream_.reset();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  std::string host_;
  int port_ = 80;
  bool tls_ = false;
  std::unique_ptr<muster::http::TlsStream> stream_;
  int fd_ = -1;
  std::string in_;
};

// The credential of every request: $MUSTER_TOKEN (the scripts that start
// the server make one with `muster token create --store`).
std::string Token() {
  const char* t = std::getenv("MUSTER_TOKEN");
  return t ? t : "";
}

int Submit(const std::string& server, int clients, int jobs, int array) {
  std::vector<std::vector<double>> lat(clients);
  std::atomic<int> errors{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      Connection conn(server);
      // Requests of `array` jobs each (1: one job per request).
      const int requests = jobs / array;
      const int mine = requests / clients + (c < requests % clients ? 1 : 0);
      const std::string body =
          array > 1 ? R"({"command":["sleep","1"],"resources":{"gpus":1},"timeLimit":"10m","array":)" +
                          std::to_string(array) + "}"
                    : std::string(R"({"command":["sleep","1"],"resources":{"gpus":1},"timeLimit":"10m"})");
      const std::string nonce = std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
      for (int i = 0; i < mine; ++i) {
        const std::string key = "bench-" + nonce + "-" + std::to_string(c) + "-" + std::to_string(i);
        const std::string request = "POST /v1/jobs HTTP/1.1\r\nHost: " + conn.host() +
                                    "\r\nContent-Type: application/json\r\nAuthorization: Bearer " + Token() +
                                    "\r\nIdempotency-Key: " + key +
                                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
        const auto s = Clock::now();
        const int status = conn.RoundTrip(request);
        lat[c].push_back(Ms(Clock::now() - s));
        if (status != 201) ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double total_ms = Ms(Clock::now() - t0);
  std::vector<double> all;
  for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
  const int submitted = static_cast<int>(all.size()) * array;
  std::printf(
      "submit: %d jobs in %zu requests of %d, %d clients: %.0f jobs/s; request latency p50 %.2f ms, "
      "p99 %.2f ms, max %.2f ms; errors %d\n",
      submitted, all.size(), array, clients, submitted / (total_ms / 1000.0), Percentile(all, 50), Percentile(all, 99),
      Percentile(all, 100), errors.load());
  return errors == 0 ? 0 : 1;
}

int List(const std::string& server, int iterations, const std::string& view) {
  httplib::Client cli(server);
  cli.set_read_timeout(120, 0);
  cli.set_default_headers({{"Authorization", "Bearer " + Token()}});
  std::vector<double> full, first;
  size_t count = 0;
  for (int it = 0; it < iterations; ++it) {
    auto s = Clock::now();
    auto r = cli.Get("/v1/jobs?limit=1000" + view);
    first.push_back(Ms(Clock::now() - s));
    if (!r || r->status != 200) return 1;
    s = Clock::now();
    std::string cont;
    count = 0;
    do {
      auto p = cli.Get("/v1/jobs?limit=1000" + view + (cont.empty() ? "" : "&continue=" + cont));
      if (!p || p->status != 200) return 1;
      const auto j = nlohmann::json::parse(p->body);
      count += j["items"].size();
      cont = j["continue"];
    } while (!cont.empty());
    full.push_back(Ms(Clock::now() - s));
  }
  std::printf("list: %zu jobs stored; first page of 1,000: p50 %.1f ms; all %zu pages: p50 %.0f ms (%.0f jobs/s)\n",
              count, Percentile(first, 50), (count + 999) / 1000, Percentile(full, 50),
              count / (Percentile(full, 50) / 1000.0));
  return 0;
}

int Ping(const std::string& server, int clients, int requests) {
  std::atomic<int> next{0}, errors{0};
  std::vector<std::vector<double>> lat(clients);
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      Connection conn(server);
      const std::string request = "GET /healthz HTTP/1.1\r\nHost: " + conn.host() + "\r\n\r\n";
      while (next.fetch_add(1) < requests) {
        const auto s = Clock::now();
        if (conn.RoundTrip(request) != 200) ++errors;
        lat[c].push_back(Ms(Clock::now() - s));
      }
    });
  }
  for (auto& t : threads) t.join();
  const double s = Ms(Clock::now() - t0) / 1000.0;
  std::vector<double> all;
  for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
  std::printf("ping: %d GET /healthz, %d clients: %.0f requests/s; latency p50 %.3f ms, p99 %.3f ms; errors %d\n",
              requests, clients, requests / s, Percentile(all, 50), Percentile(all, 99), errors.load());
  return errors.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: muster_bench_api submit|ping|list --server URL [--clients N] [--jobs N] [--iterations N]\n");
    return 2;
  }
  const std::string mode = argv[1];
  std::string server = "http://127.0.0.1:8470";
  int clients = 1, jobs = 1000, iterations = 5, array = 1;
  bool summary = false;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--server")
      server = v;
    else if (k == "--clients")
      clients = std::stoi(v);
    else if (k == "--jobs")
      jobs = std::stoi(v);
    else if (k == "--iterations")
      iterations = std::stoi(v);
    else if (k == "--array")
      array = std::max(1, std::stoi(v));
    else if (k == "--view")
      summary = v == "summary";
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (mode == "submit") return Submit(server, clients, jobs, array);
  if (mode == "list") return List(server, iterations, summary ? "&view=summary" : "");
  if (mode == "ping") return Ping(server, clients, jobs);
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
