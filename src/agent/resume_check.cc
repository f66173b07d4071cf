#include "agent/resume_check.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "checkpoint/storage.h"
#include "common/fd_io.h"

namespace muster::agent {
namespace {

std::vector<Status> CheckHere(const TaskSpec& spec) {
  std::vector<Status> out;
  for (const proto::ResumeCandidate& c : spec.resume) {
    auto storage = checkpoint::StorageFor(c.location);
    out.push_back(storage.ok() ? (*storage)->Verify(c.location, c.manifest_sha256, spec.job) : storage.status());
    if (out.back().ok()) break;
  }
  return out;
}

std::vector<Status> AllFailed(const TaskSpec& spec, const std::string& why) {
  return std::vector<Status>(spec.resume.size(), Internal(why));
}

}  // namespace

std::vector<Status> CheckResumeCandidates(const TaskSpec& spec) {
  if (spec.resume.empty()) return {};
  if (!spec.run_as) return CheckHere(spec);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return AllFailed(spec, std::string("pipe: ") + std::strerror(errno));
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return AllFailed(spec, std::string("fork: ") + std::strerror(errno));
  }
  if (child == 0) {
    ::close(fds[0]);
    if (TakeTaskIdentity(spec) != nullptr) ::_exit(126);
    nlohmann::json verdicts = nlohmann::json::array();
    for (const Status& v : CheckHere(spec)) {
      verdicts.push_back({{"code", static_cast<int>(v.code())}, {"message", v.message()}});
    }
    const std::string text = verdicts.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    ::_exit(WriteFull(fds[1], text.data(), text.size()) ? 0 : 125);
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (text.size() < (1 << 20)) text.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return AllFailed(spec, WIFEXITED(status) && WEXITSTATUS(status) == 126
                               ? "cannot take the task's identity to verify it"
                               : "the verifying process failed");
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return AllFailed(spec, "the verifying process gave no verdict");
  std::vector<Status> out;
  for (const nlohmann::json& v : j) {
    if (out.size() == spec.resume.size()) break;
    if (!v.is_object() || !v.contains("code") || !v["code"].is_number_integer() || !v.contains("message") ||
        !v["message"].is_string()) {
      return AllFailed(spec, "the verifying process gave a malformed verdict");
    }
    const int code = v["code"].get<int>();
    const bool known = code >= 0 && code <= static_cast<int>(StatusCode::kResourceExhausted);
    out.push_back(
        Status(known ? static_cast<StatusCode>(code) : StatusCode::kInternal, v["message"].get<std::string>()));
    if (out.back().ok()) break;
  }
  return out;
}

}  // namespace muster::agent
