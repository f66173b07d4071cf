#include "auth/client_credential.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "auth/grants.h"
#include "auth/munge.h"
#include "auth/request_binding.h"

namespace muster::auth {
namespace {

class BearerToken final : public ClientCredential {
 public:
  BearerToken(std::string token, std::string source) : token_(std::move(token)), source_(std::move(source)) {}
  StatusOr<std::string> Authorization(std::string_view, std::string_view, std::string_view) override {
    return "Bearer " + token_;
  }
  std::string Describe() const override {
    // The id part of a token is public; the secret never leaves.
    const std::string shown = token_.substr(0, std::min<size_t>(token_.size(), 12));
    return "token " + shown + "... from " + source_;
  }

 private:
  std::string token_, source_;
};

class Munge final : public ClientCredential {
 public:
  explicit Munge(std::string socket) : socket_(std::move(socket)) {}
  StatusOr<std::string> Authorization(std::string_view method, std::string_view target,
                                      std::string_view body) override {
    ASSIGN_OR_RETURN(std::string cred, MungeEncode(socket_, RequestDigest(method, target, body)));
    return "MUNGE " + cred;
  }
  std::string Describe() const override { return "MUNGE via " + socket_; }

 private:
  std::string socket_;
};

class None final : public ClientCredential {
 public:
  explicit None(std::string where) : where_(std::move(where)) {}
  StatusOr<std::string> Authorization(std::string_view, std::string_view, std::string_view) override {
    return std::string();
  }
  std::string Describe() const override { return where_; }

 private:
  std::string where_;
};

bool IsSocket(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

std::string TrimSlash(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

bool NamesServer(const std::string& entry, std::string_view servers) {
  const std::string want = TrimSlash(entry);
  size_t start = 0;
  while (start <= servers.size()) {
    const size_t comma = std::min(servers.find(',', start), servers.size());
    std::string one(servers.substr(start, comma - start));
    one.erase(0, one.find_first_not_of(' '));
    if (!one.empty()) one.erase(one.find_last_not_of(' ') + 1);
    if (TrimSlash(one) == want) return true;
    start = comma + 1;
  }
  return false;
}

}  // namespace

std::unique_ptr<ClientCredential> TokenCredential(std::string token, std::string source) {
  return std::make_unique<BearerToken>(std::move(token), std::move(source));
}
std::unique_ptr<ClientCredential> MungeClientCredential(std::string socket) {
  return std::make_unique<Munge>(std::move(socket));
}
std::unique_ptr<ClientCredential> NoCredential(std::string where_looked) {
  return std::make_unique<None>(std::move(where_looked));
}

CredentialSources DefaultCredentialSources() {
  CredentialSources s;
  const char* munge = std::getenv("MUSTER_MUNGE_SOCKET");
  s.munge_socket = munge && *munge ? munge : kDefaultMungeSocket;
  if (const char* f = std::getenv("MUSTER_TOKEN_FILE"); f && *f) {
    s.token_file = f;
  } else if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) {
    s.token_file = std::string(x) + "/muster/token";
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    s.token_file = std::string(h) + "/.config/muster/token";
  }
  if (const char* t = std::getenv("MUSTER_TOKEN"); t && *t) s.env_token = t;
  return s;
}

StatusOr<std::string> ReadTokenFile(const std::string& path, std::string_view servers) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return NotFound("token file " + path + ": cannot open it");
  struct stat st {};
  const bool ok = ::fstat(fd, &st) == 0;
  if (!ok || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("token file " + path + ": not a regular file");
  }
  if (st.st_mode & 077) {
    ::close(fd);
    return InvalidArgument("token file " + path + ": readable by others; run chmod 600 " + path);
  }
  if (st.st_size > 65536) {
    ::close(fd);
    return InvalidArgument("token file " + path + ": larger than 64 KiB");
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  const ssize_t n = ::read(fd, text.data(), text.size());
  ::close(fd);
  if (n < 0) return InvalidArgument("token file " + path + ": cannot read it");
  text.resize(static_cast<size_t>(n));
  return TokenFromText(text, servers, path);
}

StatusOr<std::string> TokenFromText(std::string_view text, std::string_view servers, const std::string& path) {
  std::istringstream in{std::string(text)};
  std::string line, bare;
  while (std::getline(in, line)) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string a, b, extra;
    words >> a >> b >> extra;
    if (a.empty()) continue;
    if (!extra.empty()) return InvalidArgument("token file " + path + ": a line has more than SERVER TOKEN");
    if (b.empty()) {
      if (bare.empty()) bare = a;
    } else if (NamesServer(a, servers)) {
      return b;
    }
  }
  if (bare.empty()) return NotFound("token file " + path + ": no token for " + std::string(servers));
  return bare;
}

StatusOr<std::unique_ptr<ClientCredential>> FindCredential(const CredentialSources& s, std::string_view servers) {
  // Inside a job its helpers speak as the job, whatever the user's home
  // holds (a token file there may be for another server).
  if (IsJobToken(s.env_token)) return TokenCredential(s.env_token, "$MUSTER_TOKEN (the job's token)");
  std::string looked;
  if (!s.munge_socket.empty() && s.munge_socket != "none") {
    if (IsSocket(s.munge_socket)) return MungeClientCredential(s.munge_socket);
    looked += "no munged socket at " + s.munge_socket;
  }
  if (!s.token_file.empty()) {
    auto token = ReadTokenFile(s.token_file, servers);
    if (token.ok()) return TokenCredential(*token, s.token_file);
    if (token.status().code() != StatusCode::kNotFound) return token.status();
    looked += std::string(looked.empty() ? "" : ", ") + token.status().message();
  }
  if (!s.env_token.empty()) return TokenCredential(s.env_token, "$MUSTER_TOKEN");
  looked += std::string(looked.empty() ? "" : ", ") + "MUSTER_TOKEN is not set";
  return NoCredential("no credential found (" + looked + ")");
}

}  // namespace muster::auth
