// A `muster dev` cluster for tests: the real command in a process of its
// own, with the test's own token file (never the home of whoever runs the
// tests) and no MUNGE; stopped with SIGTERM when the object goes.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../child_process.h"

namespace muster::testing {

class DevClusterProcess {
 public:
  // Runs `muster dev --port 0 --dir DIR/cluster ARGS...`, its output in
  // DIR/dev.out and its credentials in DIR/token.
  DevClusterProcess(const std::string& dir, const std::vector<std::string>& args) : dir_(dir) {
    pid_ = ::fork();
    if (pid_ != 0) return;
    std::freopen((dir + "/dev.out").c_str(), "w", stdout);
    ::dup2(::fileno(stdout), 2);
    ::setenv("MUSTER_TOKEN_FILE", (dir + "/token").c_str(), 1);
    ::setenv("MUSTER_MUNGE_SOCKET", "none", 1);
    std::vector<std::string> words = {MUSTER_BINARY, "dev", "--port", "0", "--dir", dir + "/cluster"};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    argv.reserve(words.size() + 1);
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    ::execv(MUSTER_BINARY, argv.data());
    ::_exit(127);
  }
  ~DevClusterProcess() {
    if (pid_ > 0) SignalAndReap(pid_, SIGTERM, "muster dev");
  }
  DevClusterProcess(const DevClusterProcess&) = delete;
  DevClusterProcess& operator=(const DevClusterProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The port its server bound (its port file), waiting up to 30 s; 0 if none.
  int Port() const {
    int port = 0;
    for (int i = 0; i < 3000 && port == 0; ++i) {
      std::ifstream in(dir_ + "/cluster/port");
      if (!(in >> port)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return port;
  }
  // The credential it made for whoever runs it (the token file's line for
  // its server), waiting up to 10 s; "" if none.
  std::string Token(int port) const {
    const std::string server = "http://127.0.0.1:" + std::to_string(port);
    for (int i = 0; i < 500; ++i) {
      std::ifstream in(dir_ + "/token");
      std::string s, t;
      while (in >> s >> t) {
        if (s == server) return t;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return "";
  }
  // SIGTERM, then its exit status.
  int Stop() {
    const int code = SignalAndReap(pid_, SIGTERM, "muster dev");
    pid_ = 0;
    return code;
  }
  std::string Output() const {
    std::ifstream in(dir_ + "/dev.out");
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }

 private:
  std::string dir_;
  pid_t pid_ = 0;
};

}  // namespace muster::testing
