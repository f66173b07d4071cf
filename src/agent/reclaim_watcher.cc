#include "agent/reclaim_watcher.h"

#include <nlohmann/json.hpp>

#include "common/message_text.h"
#include "common/rfc3339.h"
#include "http/client.h"

namespace muster::agent {

namespace {

constexpr Duration kGceNotice = Duration::Seconds(30);

std::string Trimmed(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1));
}

class MetadataWatcher final : public ReclaimWatcher {
 public:
  MetadataWatcher(std::string server, std::string path, const Clock& clock)
      : client_(std::move(server), Options()), path_(std::move(path)), clock_(clock) {}

  StatusOr<std::optional<ReclaimNotice>> Check() override {
    StatusOr<http::ClientResponse> r = Get();
    if (r.ok() && r->status == 401) {  // IMDSv2: a session token first
      StatusOr<http::ClientResponse> t =
          client_.Send("PUT", "/latest/api/token", {{"X-aws-ec2-metadata-token-ttl-seconds", "21600"}}, "", "");
      if (!t.ok()) return t.status();
      if (t->status != 200) return Unavailable("the metadata token request answered HTTP " + std::to_string(t->status));
      token_ = Trimmed(t->body);
      r = Get();
    }
    if (!r.ok()) return r.status();
    const Time now = clock_.Now();
    ASSIGN_OR_RETURN(std::optional<ReclaimNotice> notice, ParseReclaimAnswer(r->status, r->body, now, first_seen_));
    if (notice && !first_seen_) first_seen_ = now;
    return notice;
  }

 private:
  static http::ClientOptions Options() {
    http::ClientOptions o;
    o.connect_timeout = std::chrono::milliseconds(2'000);
    o.read_timeout = std::chrono::milliseconds(2'000);
    o.max_body_bytes = 64 * 1024;
    return o;
  }
  StatusOr<http::ClientResponse> Get() {
    http::Fields headers = {{"Metadata-Flavor", "Google"}};
    if (!token_.empty()) headers.push_back({"X-aws-ec2-metadata-token", token_});
    return client_.Get(path_, headers);
  }

  http::Client client_;
  std::string path_;
  const Clock& clock_;
  std::string token_;
  std::optional<Time> first_seen_;
};

}  // namespace

StatusOr<std::optional<ReclaimNotice>> ParseReclaimAnswer(int status, std::string_view body, Time now,
                                                          std::optional<Time> first_seen) {
  if (status == 404) return std::optional<ReclaimNotice>();
  if (status != 200) {
    return Unavailable("the metadata endpoint answered HTTP " + std::to_string(status) + ": " +
                       SanitizeForMessage(body, 120));
  }
  const std::string text = Trimmed(body);
  if (text == "FALSE") return std::optional<ReclaimNotice>();
  if (text == "TRUE") {
    const Time seen = first_seen.value_or(now);
    return std::optional<ReclaimNotice>(ReclaimNotice{seen + kGceNotice, "gce preempted"});
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("action") || !j["action"].is_string() || !j.contains("time") ||
      !j["time"].is_string()) {
    return InvalidArgument(
        "expected {\"action\": ..., \"time\": ...}, TRUE or FALSE, got " + QuoteForMessage(text, 120),
        "reclaim notice");
  }
  const std::string action = j["action"].get<std::string>();
  const std::string when = j["time"].get<std::string>();
  const std::optional<Time> deadline = ParseRfc3339Utc(when);
  if (!deadline) return InvalidArgument("is not an RFC 3339 time: " + QuoteForMessage(when), "reclaim notice.time");
  return std::optional<ReclaimNotice>(
      ReclaimNotice{*deadline, "aws spot instance-action: " + SanitizeForMessage(action, 32) + " at " + when});
}

std::unique_ptr<ReclaimWatcher> NewMetadataReclaimWatcher(const std::string& url, const Clock& clock) {
  // "http://host[:port]/path": the client takes the server, requests the path.
  const size_t scheme = url.find("://");
  const size_t slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  const std::string server = slash == std::string::npos ? url : url.substr(0, slash);
  const std::string path = slash == std::string::npos ? "/" : url.substr(slash);
  return std::make_unique<MetadataWatcher>(server, path, clock);
}

}  // namespace muster::agent
