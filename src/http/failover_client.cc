#include "http/failover_client.h"

#include <optional>

namespace muster::http {
namespace {

// "http://a:1/" and "a:1" are one server.
std::string_view Bare(std::string_view s) {
  if (s.rfind("http://", 0) == 0) s.remove_prefix(7);
  while (!s.empty() && s.back() == '/') s.remove_suffix(1);
  return s;
}

}  // namespace

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

bool FailoverClient::Locate() {
  located_ = true;
  ClientOptions quick = options_;
  quick.connect_timeout = std::chrono::milliseconds(1000);
  quick.read_timeout = std::chrono::milliseconds(1000);
  for (size_t i = 0; i < servers_.size(); ++i) {
    Client probe(servers_[i], quick);
    auto r = probe.Get("/healthz");
    if (!r.ok() || r->status != 200) continue;
    if (r->Header("X-Muster-Role") == "leader") {
      At(i);
      return true;
    }
    // A standby names the leader in its body ("leader": "http://...").
    const size_t at = r->body.find("\"leader\":\"");
    if (at == std::string::npos) continue;
    const size_t start = at + 10, end = r->body.find('"', start);
    const std::string_view leader = Bare(std::string_view(r->body).substr(start, end - start));
    for (size_t j = 0; j < servers_.size(); ++j) {
      if (Bare(servers_[j]) == leader) {
        At(j);
        return true;
      }
    }
  }
  return false;
}

StatusOr<ClientResponse> FailoverClient::Send(std::string_view method, std::string_view target,
                                              const Fields& headers, std::string_view body,
                                              std::string_view content_type) {
  if (servers_.size() == 1) return At(0).Send(method, target, headers, body, content_type);
  if (!located_) Locate();
  size_t i;
  {
    std::lock_guard<std::mutex> lock(mu_);
    i = current_;
  }
  std::vector<bool> asked(servers_.size(), false);
  std::string said;
  while (true) {
    asked[i] = true;
    auto r = At(i).Send(method, target, headers, body, content_type);
    const bool not_leading = r.ok() && r->status == 503 && !r->Header("X-Muster-Role").empty();
    if (r.ok() && !not_leading) return r;
    if (!r.ok() && r.status().code() != StatusCode::kUnavailable) return r;  // a malformed address
    if (!r.ok() && r.status().message() == "interrupted") return r;
    said += (said.empty() ? "" : "; ") + servers_[i] + ": " +
            (r.ok() ? std::string(r->Header("X-Muster-Role")) : r.status().message());
    // The leader the answer names, if it is one of ours; else the next.
    std::optional<size_t> next;
    if (not_leading) {
      const std::string_view leader = Bare(r->Header("X-Muster-Leader"));
      for (size_t j = 0; j < servers_.size() && !leader.empty(); ++j) {
        if (Bare(servers_[j]) == leader && !asked[j]) next = j;
      }
    }
    for (size_t k = 1; !next && k < servers_.size(); ++k) {
      const size_t j = (i + k) % servers_.size();
      if (!asked[j]) next = j;
    }
    if (!next) {
      located_ = false;  // look again before the next request
      return Status(StatusCode::kUnavailable, "no server leads now (" + said + ")");
    }
    i = *next;
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
