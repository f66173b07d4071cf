// A real `muster agent` process for tests: fake GPUs (or the fake NVML
// library), its own state directory, killed with SIGKILL or stopped with
// SIGTERM, restartable on the same state.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "../child_process.h"
#include "../credentials.h"

namespace muster::testing {

class AgentProcess {
 public:
  AgentProcess(std::string server_url, std::string name, std::string dir)
      : server_(std::move(server_url)), name_(std::move(name)), dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_);
  }
  ~AgentProcess() { Stop(); }

  // Extra flags and environment for the next Start().
  std::vector<std::string> flags = {"--fake-gpus", "8xH100"};
  std::map<std::string, std::string> env;
  // A command the agent runs under, e.g. {"/usr/sbin/ip", "netns", "exec", NS}.
  std::vector<std::string> wrapper;
  // Tasks share the node's /tmp (where tests keep their files) unless a
  // test asks for each task's own.
  bool shared_tmp = true;

  void Start() {
    // Its node's credential, made by an admin (the test's MUSTER_TOKEN)
    // through the server the first time.
    const std::string token_file = dir_ + "/token";
    if (!std::filesystem::exists(token_file)) {
      const char* admin = std::getenv("MUSTER_TOKEN");
      WriteTokenFile(token_file, TokenFromServer(server_, admin ? admin : "", "--node", name_));
    }
    std::vector<std::string> args = wrapper;
    for (const char* a : {MUSTER_BINARY, "agent", "--token-file"}) args.push_back(a);
    args.push_back(token_file);
    args.push_back("--server");
    // Tests start agents one by one and wait for them: no start jitter.
    for (const std::string& a : {server_, std::string("--name"), name_, std::string("--state-dir"), dir_ + "/state",
                                 std::string("--start-jitter"), std::string("0")}) {
      args.push_back(a);
    }
    args.insert(args.end(), flags.begin(), flags.end());
    if (shared_tmp) args.push_back("--shared-tmp");
    pid_ = fork();
    if (pid_ == 0) {
      const std::string log = dir_ + "/agent.log";
      FILE* f = freopen(log.c_str(), "a", stdout);
      (void)f;
      dup2(fileno(stdout), 2);
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> argv;
      argv.reserve(args.size() + 1);
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  void Kill() { Signal(SIGKILL); }
  // SIGSTOP / SIGCONT: the agent freezes (its tasks do not).
  void Pause() { ::kill(pid_, SIGSTOP); }
  void Resume() { ::kill(pid_, SIGCONT); }
  int Stop() { return Signal(SIGTERM); }
  bool running() const { return pid_ > 0; }
  const std::string& name() const { return name_; }
  std::string state_dir() const { return dir_ + "/state"; }
  std::string log() const {
    std::ifstream in(dir_ + "/agent.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  int Signal(int sig) {
    if (pid_ <= 0) return -1;
    const int code = SignalAndReap(pid_, sig, ("agent " + name_).c_str());
    pid_ = -1;
    return code;
  }

  std::string server_, name_, dir_;
  pid_t pid_ = -1;
};

}  // namespace muster::testing
