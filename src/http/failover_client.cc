#include "http/failover_client.h"

namespace muster::http {

std::vector<std::string> SplitServers(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view one = list.substr(0, comma);
    while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
    while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
    if (!one.empty()) out.emplace_back(one);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

FailoverClient::FailoverClient(std::string_view servers, ClientOptions options)
    : servers_(SplitServers(servers)), options_(options) {
  if (servers_.empty()) servers_.emplace_back(servers);  // the client reports the malformed address
  for (const std::string& s : servers_) clients_.push_back(std::make_unique<Client>(s, options_));
}

FailoverClient::~FailoverClient() = default;

StatusOr<ClientResponse> FailoverClient::Get(std::string_view target, const Fields& headers) {
  return Send("GET", target, headers, "", "");
}

StatusOr<ClientResponse> FailoverClient::Post(std::string_view target, std::string_view body,
                                              std::string_view content_type, const Fields& headers) {
  return Send("POST", target, headers, body, content_type);
}

Client& FailoverClient::At(size_t i) {
  std::lock_guard<std::mutex> lock(mu_);
  current_ = i;
  return *clients_[i];
}

int FindLeader(const std::vector<std::string>& servers, std::chrono::milliseconds timeout, std::string* seen,
               const TlsClientOptions& tls) {
  ClientOptions quick;
  quick.tls = tls;
  quick.connect_timeout = timeout;
  quick.read_timeout = timeout;
  for (size_t i = 0; i < servers.size(); ++i) {
    Client probe(servers[i], quick);
    auto r = probe.Get("/healthz");
    if (r.ok() && r->status == 200 && r->Header("X-Muster-Role") == "leader") return static_cast<int>(i);
    if (seen != nullptr) {
      *seen += (seen->empty() ? "" : "; ") + servers[i] + ": " +
               (!r.ok()                              ? r.status().message()
                : r->Header("X-Muster-Role").empty() ? "HTTP " + std::to_string(r->status)
                                                     : std::string(r->Header("X-Muster-Role")));
    }
  }
  return -1;
}

bool FailoverClient::Locate(std::string* seen) {
  located_ = true;
  const int leader = FindLeader(servers_, std::chrono::milliseconds(1000), seen, options_.tls);
  if (leader < 0) return false;
  At(static_cast<size_t>(leader));
  return true;
}

StatusOr<ClientResponse> FailoverClient::Send(std::string_view method, std::string_view target, const Fields& headers,
                                              std::string_view body, std::string_view content_type) {
  return OnLeader([&](Client& c) { return c.Send(method, target, headers, body, content_type); });
}

StatusOr<ClientResponse> FailoverClient::Stream(std::string_view target, const Fields& headers,
                                                const ChunkSink& on_data) {
  return OnLeader([&](Client& c) { return c.Stream(target, headers, on_data); });
}

StatusOr<ClientResponse> FailoverClient::OnLeader(const std::function<StatusOr<ClientResponse>(Client&)>& call) {
  if (servers_.size() == 1) return call(At(0));
  if (!located_) {
    // Nobody to send it to: not even a server that did not answer (it may
    // be a paused leader, and the request would wait out its timeout).
    std::string seen;
    if (!Locate(&seen)) {
      located_ = false;
      return Status(StatusCode::kUnavailable, "no server leads now (" + seen + ")");
    }
  }
  size_t i;
  {
    std::lock_guard<std::mutex> lock(mu_);
    i = current_;
  }
  bool relocated = false;
  while (true) {
    auto r = call(At(i));
    const bool not_leading = r.ok() && r->status == 503 && !r->Header("X-Muster-Role").empty();
    if (r.ok() && !not_leading) return r;
    if (!r.ok() && r.status().code() != StatusCode::kUnavailable) return r;  // a malformed address
    if (!r.ok() && r.status().message() == "interrupted") return r;
    // Look for the leader once (each server's /healthz, briefly).
    std::string seen;
    if (!relocated) {
      relocated = true;
      if (Locate(&seen)) {
        std::lock_guard<std::mutex> lock(mu_);
        if (current_ != i) {
          i = current_;
          continue;
        }
      }
    }
    if (seen.empty()) {
      seen = servers_[i] + ": " + (r.ok() ? std::string(r->Header("X-Muster-Role")) : r.status().message());
    }
    located_ = false;  // look again before the next request
    return Status(StatusCode::kUnavailable, "no server leads now (" + seen + ")");
  }
}

void FailoverClient::set_read_timeout(std::chrono::milliseconds t) {
  for (auto& c : clients_) c->set_read_timeout(t);
}

void FailoverClient::Interrupt() {
  std::lock_guard<std::mutex> lock(mu_);
  clients_[current_]->Interrupt();
}

std::string FailoverClient::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return servers_[current_];
}

}  // namespace muster::http
