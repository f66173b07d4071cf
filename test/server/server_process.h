// A real `muster server` process for tests: its own directory, store and a
// free loopback port; started, killed with SIGKILL, stopped with SIGTERM, and
// restarted on the same store and port.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "../child_process.h"
#include "../credentials.h"

namespace muster::testing {

class ServerProcess {
 public:
  // `config` is YAML appended to the generated store line; `store` is the
  // store's URL (default: a SQLite file in the server's directory).
  // `admin_token`: write one into the store (a second server on a shared
  // store uses the first's: a token written behind a running leader's back
  // is not one it knows).
  explicit ServerProcess(const std::string& config = "", const std::string& store = "", bool admin_token = true) {
    static int counter = 0;
    dir_ = ::testing::TempDir() + "/muster_server_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    store_ = store.empty() ? dir_ + "/muster.db" : store;
    // HTTPS when the config names a certificate (the CLI and agents the
    // test starts then need MUSTER_CA).
    tls_ = config.find("tls:") != std::string::npos;
    // Tests run their jobs as root (the test's own user); a server refuses
    // that unless configured, which security tests do their own way.
    const std::string auth = config.find("auth:") == std::string::npos ? "auth: {rootJobs: [root]}\n" : "";
    std::ofstream(dir_ + "/config.yaml") << "store: \"" << store_ << "\"\n" << auth << config;
    // An admin's token, in the store before the server starts; the CLI the
    // test runs finds it in MUSTER_TOKEN.
    IsolateCredentials();
    if (admin_token) {
      admin_token_ = TokenInStore(store_, "root");
      ::setenv("MUSTER_TOKEN", admin_token_.c_str(), 1);
    } else if (const char* t = std::getenv("MUSTER_TOKEN")) {
      admin_token_ = t;
    }
  }
  ~ServerProcess() {
    Kill();
    std::filesystem::remove_all(dir_);
  }

  // Starts the server (on the previous port when restarting) and waits until
  // it serves. Returns false if it exited instead.
  bool Start() {
    const std::string port_file = dir_ + "/port";
    std::filesystem::remove(port_file);
    const std::string listen = listen_host + ":" + std::to_string(port_);
    pid_ = fork();
    if (pid_ == 0) {
      const std::string log = dir_ + "/server.log";
      FILE* f = freopen(log.c_str(), "a", stdout);
      (void)f;
      dup2(fileno(stdout), 2);
      execl(MUSTER_BINARY, MUSTER_BINARY, "server", "-c", (dir_ + "/config.yaml").c_str(), "--listen", listen.c_str(),
            "--port-file", port_file.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    // Up to a minute: a restart reloads the whole store (slow under ASan).
    for (int i = 0; i < 6000; ++i) {
      std::ifstream in(port_file);
      if (in >> port_) return true;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  // The address to listen on ("0.0.0.0" to be reachable from network
  // namespaces); url() stays on loopback.
  std::string listen_host = "127.0.0.1";
  void Kill() { Signal(SIGKILL); }
  // SIGSTOP / SIGCONT: the server freezes (an outage its agents outlive).
  void Pause() { ::kill(pid_, SIGSTOP); }
  void Resume() { ::kill(pid_, SIGCONT); }
  // SIGHUP: it reads its configuration (dir()/config.yaml) again.
  void Hangup() { ::kill(pid_, SIGHUP); }
  // SIGTERM; returns the exit code.
  int Stop() { return Signal(SIGTERM); }
  // The exit code if the process has ended by itself (then reaped), else -1.
  int Exited() {
    int status = 0;
    if (pid_ <= 0 || waitpid(pid_, &status, WNOHANG) != pid_) return -1;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  bool running() const { return pid_ > 0; }

  int port() const { return port_; }
  // root's token (root is an admin unless the config says otherwise).
  const std::string& admin_token() const { return admin_token_; }
  // A token for another user, made through the running server.
  std::string UserToken(const std::string& user) const { return TokenFromServer(url(), admin_token_, "--user", user); }
  std::string url() const {
    return (tls_ ? "https://" : "http://") + std::string("127.0.0.1:") + std::to_string(port_);
  }
  const std::string& dir() const { return dir_; }
  std::string log() const {
    std::ifstream in(dir_ + "/server.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  int Signal(int sig) {
    if (pid_ <= 0) return -1;
    const int code = SignalAndReap(pid_, sig, "muster server");
    pid_ = -1;
    return code;
  }

  std::string dir_;
  std::string store_;
  std::string admin_token_;
  bool tls_ = false;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace muster::testing
