#include "agent/log_server.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <utility>

#include "auth/grants.h"
#include "http/server.h"
#include "http/tls.h"

namespace muster::agent {

LogServer::LogServer(std::string grant_key, const Clock& clock, std::function<std::string(const std::string&)> log_path)
    : grant_key_(std::move(grant_key)), clock_(clock), log_path_(std::move(log_path)) {}

StatusOr<std::unique_ptr<LogServer>> LogServer::Start(const Options& options, std::string grant_key, const Clock& clock,
                                                      std::function<std::string(const std::string&)> log_path) {
  std::unique_ptr<LogServer> logs(new LogServer(std::move(grant_key), clock, std::move(log_path)));
  http::Server::Options o;
  o.host = options.host;
  o.port = options.port;
  o.worker_threads = 2;
  if (!options.tls_name.empty()) {
    auto made = http::MakeSelfSignedCertificate(options.tls_name, 3650);
    if (!made.ok()) return made.status();
    auto ctx = http::TlsServerContext::FromPem(made->cert_pem, made->key_pem);
    if (!ctx.ok()) return ctx.status();
    o.tls = std::move(*ctx);
    logs->tls_pin_ = made->pin;
  }
  logs->server_ = std::make_unique<http::Server>(std::move(o));
  LogServer* self = logs.get();
  logs->server_->Handle("GET", "/logs/*", [self](const http::Request& req, http::Response& res) {
    const std::string& key = req.captures[0];
    if (!ValidTaskKey(key)) return res.Set(400, "bad task key", "text/plain");
    // Only with the server's grant for this task (auth/grants.h): the
    // server decided that the caller may read this log.
    if (Status g =
            auth::VerifyLogGrant(self->grant_key_, key, req.Header("X-Muster-Grant"), self->clock_.Now().millis());
        !g.ok()) {
      return res.Set(403, g.message() + "; logs are read through the server (muster logs)", "text/plain");
    }
    const std::string path = self->log_path_(key);
    if (!std::filesystem::exists(path)) return res.Set(404, "no log for " + key, "text/plain");
    auto num = [&](const char* name) -> int64_t {
      if (!req.HasParam(name)) return -1;
      return std::atoll(req.Param(name).c_str());
    };
    auto [text, next] = ReadLog(path, num("offset"), num("tail"));
    res.headers.emplace_back("X-Muster-Log-Offset", std::to_string(next));
    res.Set(200, std::move(text), "text/plain; charset=utf-8");
  });
  if (Status bound = logs->server_->Bind(); !bound.ok()) {
    return Status(StatusCode::kUnavailable,
                  "cannot listen for log requests on " + options.host + ": " + bound.message());
  }
  logs->port_ = logs->server_->port();
  logs->thread_ = std::thread([self] { self->server_->Serve(); });
  return logs;
}

LogServer::~LogServer() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

void LogServer::Stop() {
  if (server_) server_->Stop();
}

bool ValidTaskKey(const std::string& key) {
  static const std::regex re(R"(j[0-9]{1,18}\.a[0-9]{1,9}\.r[0-9]{1,9})");
  return std::regex_match(key, re);
}

std::pair<std::string, int64_t> ReadLog(const std::string& path, int64_t offset, int64_t tail) {
  constexpr int64_t kMaxChunk = 4 << 20;
  std::ifstream in(path, std::ios::binary);
  if (!in) return {"", 0};
  in.seekg(0, std::ios::end);
  const int64_t size = in.tellg();
  int64_t from = std::clamp<int64_t>(offset < 0 ? 0 : offset, 0, size);
  if (tail >= 0) {
    from = std::max<int64_t>(0, size - kMaxChunk);
    in.seekg(from);
    std::string text(static_cast<size_t>(size - from), '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    size_t pos = text.size();
    if (pos > 0 && text[pos - 1] == '\n') --pos;
    int64_t lines = 0;
    while (pos > 0 && lines < tail) {
      const size_t nl = text.rfind('\n', pos - 1);
      ++lines;
      if (nl == std::string::npos) {
        pos = 0;
        break;
      }
      pos = nl;
      if (lines == tail) ++pos;
    }
    if (tail == 0) pos = text.size();
    return {text.substr(pos), size};
  }
  const int64_t n = std::min(kMaxChunk, size - from);
  std::string out(static_cast<size_t>(n), '\0');
  in.seekg(from);
  in.read(out.data(), n);
  return {out, from + n};
}

}  // namespace muster::agent
