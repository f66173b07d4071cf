#include "cli/client.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include <CLI/CLI.hpp>

#include "auth/client_credential.h"
#include "http/failover_client.h"

namespace muster::cli {

double RetrySeconds() {
  const char* env = std::getenv("MUSTER_RETRY_SECONDS");
  return env && *env ? std::atof(env) : 10.0;
}

std::string StringField(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

std::string DefaultServer() {
  const char* env = std::getenv("MUSTER_SERVER");
  return env && *env ? env : "http://127.0.0.1:8470";
}

void AddServerOptions(CLI::App* sub, std::string& server) {
  sub->add_option("--server", server,
                  "Server address, or several comma-separated (default $MUSTER_SERVER or http://127.0.0.1:8470)");
  sub->add_option_function<std::string>(
      "--ca", [](const std::string& file) { ::setenv("MUSTER_CA", file.c_str(), 1); },
      "CA certificates (PEM) that vouch for an https:// server (default $MUSTER_CA, else the system's)");
}

Client::Client(std::string server, std::string act_as, double retry_for_seconds)
    : server_(std::move(server)), act_as_(std::move(act_as)), retry_for_(retry_for_seconds) {
  http::ClientOptions options;
  if (const char* ca = std::getenv("MUSTER_CA"); ca != nullptr && *ca) options.tls.ca_file = ca;
  http_ = std::make_unique<http::FailoverClient>(server_, options);
  auto found = auth::FindCredential(auth::DefaultCredentialSources(), server_);
  if (found.ok()) {
    credential_ = std::move(*found);
  } else {
    credential_error_ = found.status();
  }
}

StatusOr<http::Fields> Client::Headers(std::string_view method, std::string_view target, std::string_view body) {
  RETURN_IF_ERROR(credential_error_);
  http::Fields h;
  ASSIGN_OR_RETURN(std::string authorization, credential_->Authorization(method, target, body));
  if (!authorization.empty()) h.emplace_back("Authorization", std::move(authorization));
  if (!act_as_.empty()) h.emplace_back("X-Muster-Act-As", act_as_);
  return h;
}

Client::~Client() = default;

Status Client::Unreachable(const Status& why) const {
  std::string hint;
  if (why.message().find("certificate verify failed") != std::string::npos) {
    hint = std::getenv("MUSTER_CA") ? " (the CAs of $MUSTER_CA or --ca do not vouch for it)"
                                    : " (give the CA that signed its certificate with --ca FILE or $MUSTER_CA)";
  }
  return Status(StatusCode::kUnavailable, "cannot reach the server at " + server_ + ": " + why.message() + hint);
}

namespace {

StatusOr<Response> Decode(const http::ClientResponse& r) {
  Response out;
  out.status = r.status;
  out.body = nlohmann::json::parse(r.body, nullptr, false);
  if (out.body.is_discarded()) {
    return Status(StatusCode::kUnavailable,
                  "the server answered " + std::to_string(r.status) + " with a body that is not JSON");
  }
  return out;
}

// A 429 means the server did not act on the request: it is sent again once
// the wait the server asks for (Retry-After, at most 5 s) has passed.
bool RateLimited(const StatusOr<http::ClientResponse>& r) { return r.ok() && r->status == 429; }

// A server that does not lead (a standby, or one taking over) did not act
// on the request either: it is sent again until one leads.
bool NotLeading(const StatusOr<http::ClientResponse>& r) {
  return r.ok() && r->status == 503 && !r->Header("X-Muster-Role").empty();
}

void Pause(const StatusOr<http::ClientResponse>& r, std::chrono::milliseconds& backoff) {
  std::chrono::milliseconds wait = backoff;
  if (RateLimited(r)) {
    const std::string_view after = r->Header("Retry-After");
    int seconds = 1;
    std::from_chars(after.data(), after.data() + after.size(), seconds);
    wait = std::max(wait, std::chrono::milliseconds(1000 * std::clamp(seconds, 0, 5)));
  }
  std::this_thread::sleep_for(wait);
  backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
}

}  // namespace

StatusOr<http::ClientResponse> Client::Exchange(const std::function<StatusOr<http::ClientResponse>()>& send,
                                                bool retry_busy) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(retry_for_);
  std::chrono::milliseconds backoff(50);
  while (true) {
    auto r = send();
    // A malformed --server, or no usable credential: no retry helps; nor
    // for a server whose certificate cannot be verified.
    if (!r.ok() && r.status().code() == StatusCode::kUnauthenticated) return Unreachable(r.status());
    if (!r.ok() && r.status().code() != StatusCode::kUnavailable) return r.status();
    // With an answer, only 429 (not acted on) is sent again, and with
    // `retry_busy` also 409 "still in progress" and 503.
    const bool again =
        !r.ok() || RateLimited(r) || NotLeading(r) || (retry_busy && (r->status == 409 || r->status == 503));
    if (!again) return r;
    if (std::chrono::steady_clock::now() >= deadline) {
      if (r.ok()) return r;
      return Unreachable(r.status());
    }
    Pause(r, backoff);
  }
}

StatusOr<Response> Client::Get(const std::string& path) {
  ASSIGN_OR_RETURN(http::ClientResponse r, Exchange([&]() -> StatusOr<http::ClientResponse> {
                     ASSIGN_OR_RETURN(http::Fields h, Headers("GET", path, ""));
                     return http_->Get(path, h);
                   }));
  return Decoded(r);
}

StatusOr<Response> Client::GetText(const std::string& path, const std::vector<std::string>& headers) {
  ASSIGN_OR_RETURN(http::ClientResponse r, Exchange([&]() -> StatusOr<http::ClientResponse> {
                     ASSIGN_OR_RETURN(http::Fields h, Headers("GET", path, ""));
                     return http_->Get(path, h);
                   }));
  if (r.status != 200) return Decoded(r);
  Response out;
  out.status = r.status;
  out.text = std::move(r.body);
  for (const std::string& h : headers) out.headers[h] = std::string(r.Header(h));
  return out;
}

StatusOr<Response> Client::Post(const std::string& path, const std::string& body, const std::string& content_type,
                                const std::map<std::string, std::string>& headers) {
  // Without an answer every request is sent again: a submit carries an
  // Idempotency-Key and the actions (cancel, hold, release, requeue) are
  // idempotent. A keyed submit also waits out "still in progress" and 503.
  // Each try gets a fresh credential (a MUNGE one is good once).
  ASSIGN_OR_RETURN(http::ClientResponse r, Exchange(
                                               [&]() -> StatusOr<http::ClientResponse> {
                                                 ASSIGN_OR_RETURN(http::Fields h, Headers("POST", path, body));
                                                 for (const auto& [k, v] : headers) h.emplace_back(k, v);
                                                 return http_->Post(path, body, content_type, h);
                                               },
                                               /*retry_busy=*/headers.count("Idempotency-Key") > 0));
  return Decoded(r);
}

StatusOr<Response> Client::Watch(const std::string& path, const std::function<bool(std::string_view)>& line) {
  // Sent once: what a broken watch had delivered is for its caller to
  // resume from (a watch from the newest version it saw).
  std::string partial;
  ASSIGN_OR_RETURN(http::Fields h, Headers("GET", path, ""));
  StatusOr<http::ClientResponse> r = http_->Stream(path, h, [&](std::string_view data) {
    partial.append(data);
    for (size_t nl; (nl = partial.find('\n')) != std::string::npos; partial.erase(0, nl + 1)) {
      if (!line(std::string_view(partial).substr(0, nl))) return false;
    }
    return true;
  });
  if (!r.ok()) return r.status().code() == StatusCode::kUnavailable ? Unreachable(r.status()) : r.status();
  if (r->status != 200) return Decoded(*r);
  Response out;
  out.status = 200;
  return out;
}

StatusOr<Response> Client::Put(const std::string& path, const std::string& json_body) {
  ASSIGN_OR_RETURN(http::ClientResponse r, Exchange([&]() -> StatusOr<http::ClientResponse> {
                     ASSIGN_OR_RETURN(http::Fields h, Headers("PUT", path, json_body));
                     return http_->Send("PUT", path, h, json_body, "application/json");
                   }));
  return Decoded(r);
}

StatusOr<Response> Client::Delete(const std::string& path) {
  ASSIGN_OR_RETURN(http::ClientResponse r, Exchange([&]() -> StatusOr<http::ClientResponse> {
                     ASSIGN_OR_RETURN(http::Fields h, Headers("DELETE", path, ""));
                     return http_->Send("DELETE", path, h, "", "");
                   }));
  return Decoded(r);
}

StatusOr<Response> Client::Decoded(const http::ClientResponse& r) const {
  ASSIGN_OR_RETURN(Response out, Decode(r));
  if (out.status == 401 && out.body.is_object() && out.body.contains("error") && out.body["error"].is_object() &&
      credential_) {
    nlohmann::json& e = out.body["error"];
    e["message"] = e.value("message", std::string()) + " [this CLI: " + credential_->Describe() + "]";
  }
  return out;
}

Status Client::ErrorOf(const Response& r) {
  std::string message = "server answered " + std::to_string(r.status);
  if (r.body.is_object() && r.body.contains("error") && r.body["error"].is_object()) {
    message = r.body["error"].value("message", message);
  }
  StatusCode code = StatusCode::kInternal;
  if (r.status == 400 || r.status == 413 || r.status == 422) code = StatusCode::kInvalidArgument;
  if (r.status == 401) code = StatusCode::kUnauthenticated;
  if (r.status == 403) code = StatusCode::kPermissionDenied;
  if (r.status == 404) code = StatusCode::kNotFound;
  if (r.status == 409) code = StatusCode::kFailedPrecondition;
  if (r.status == 429 || r.status == 503) code = StatusCode::kUnavailable;
  // The server's message already starts with the field path.
  return Status(code, message);
}

std::string NewUuid() {
  std::random_device rd;
  std::uniform_int_distribution<uint32_t> byte(0, 255);
  unsigned char b[16];
  for (auto& x : b) x = static_cast<unsigned char>(byte(rd));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[b[i] >> 4];
    out += kHex[b[i] & 15];
  }
  return out;
}

std::string UrlEncode(const std::string& v) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : v) {
    if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~' || ch == ',') {
      out += static_cast<char>(ch);
    } else {
      out += '%';
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    }
  }
  return out;
}

}  // namespace muster::cli
