#include "agent/image_puller.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "agent/root_exec.h"
#include "agent/spawn.h"

namespace muster::agent {

namespace {

constexpr int kAtOnce = 2;

// The last non-empty line of `path`, without Podman's "Error: ".
std::string LastLine(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  if (last.rfind("Error: ", 0) == 0) last.erase(0, 7);
  return last.substr(0, 1024);
}

}  // namespace

ImagePuller::ImagePuller(std::vector<std::string> podman, std::string dir, const Clock& clock)
    : podman_(std::move(podman)), dir_(std::move(dir)), clock_(clock) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
}

ImagePuller::~ImagePuller() {
  for (auto& [image, p] : pulls_) {
    if (p.pid > 0) {
      ::kill(p.pid, SIGTERM);
      ::waitpid(p.pid, nullptr, 0);
    }
  }
}

std::string ImagePuller::OutputPath(const std::string& image) const {
  return dir_ + "/" + std::to_string(std::hash<std::string>{}(image)) + ".log";
}

void ImagePuller::Want(const std::vector<std::string>& images) {
  for (auto& [image, p] : pulls_) p.wanted = false;
  for (const std::string& image : images) {
    Pull& p = pulls_[image];
    if (p.state.empty()) p.state = "waiting";
    p.wanted = true;
  }
  std::erase_if(pulls_, [](const auto& kv) { return !kv.second.wanted && kv.second.pid == 0; });
  Poll();
}

void ImagePuller::Start(const std::string& image, Pull& p) {
  std::vector<std::string> argv = podman_;
  argv.insert(argv.end(), {"pull", image});
  ::unlink(OutputPath(image).c_str());
  auto pid = Spawn(argv, RootEnvironment(), OutputPath(image));
  p.started_ms = clock_.Now().millis();
  if (!pid.ok()) {
    p.state = "failed";
    p.message = pid.status().message();
    return;
  }
  p.pid = *pid;
  p.state = "pulling";
}

void ImagePuller::Poll() {
  int running = 0;
  for (auto& [image, p] : pulls_) {
    if (p.pid <= 0) continue;
    int status = 0;
    if (::waitpid(p.pid, &status, WNOHANG) != p.pid) {
      ++running;
      continue;
    }
    p.pid = 0;
    p.ms = clock_.Now().millis() - p.started_ms;
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    p.state = ok ? "pulled" : "failed";
    p.message = ok ? "" : LastLine(OutputPath(image));
    if (!ok && p.message.empty()) p.message = "podman pull ended with status " + std::to_string(status);
    ::unlink(OutputPath(image).c_str());
  }
  std::erase_if(pulls_, [](const auto& kv) { return !kv.second.wanted && kv.second.pid == 0; });
  for (auto& [image, p] : pulls_) {
    if (running >= kAtOnce) break;
    if (p.state != "waiting") continue;
    Start(image, p);
    if (p.pid > 0) ++running;
  }
}

std::vector<proto::ImagePullReport> ImagePuller::Reports() const {
  std::vector<proto::ImagePullReport> out;
  for (const auto& [image, p] : pulls_) out.push_back({image, p.state, p.message, p.ms});
  return out;
}

}  // namespace muster::agent
