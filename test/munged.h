// A munged of the test's own: its own key, socket and state in a temporary
// directory, so nothing on the machine (a system munged, /etc/munge) is
// used or touched. Started in the foreground as a child; killed when the
// object goes.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "child_process.h"

namespace muster::testing {

class MungeDaemon {
 public:
  MungeDaemon() {
    static int counter = 0;
    dir_ = ::testing::TempDir() + "/munged_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ::chmod(dir_.c_str(), 0700);
    std::random_device rd;
    std::string key(1024, '\0');
    for (char& c : key) c = static_cast<char>(rd());
    std::ofstream(dir_ + "/munge.key", std::ios::binary) << key;
    ::chmod((dir_ + "/munge.key").c_str(), 0600);
  }
  ~MungeDaemon() {
    if (pid_ > 0) SignalAndReap(pid_, SIGTERM, "munged");
    std::filesystem::remove_all(dir_);
  }

  // Starts munged; true once its socket exists.
  bool Start() {
    pid_ = fork();
    if (pid_ == 0) {
      const std::string log = dir_ + "/munged.log";
      FILE* f = freopen(log.c_str(), "a", stdout);
      (void)f;
      dup2(fileno(stdout), 2);
      // As root munged wants --force; --foreground keeps it our child.
      execl("/usr/sbin/munged", "munged", "--foreground", "--force", ("--key-file=" + dir_ + "/munge.key").c_str(),
            ("--socket=" + socket()).c_str(), ("--pid-file=" + dir_ + "/munged.pid").c_str(),
            ("--log-file=" + dir_ + "/munged.log").c_str(), ("--seed-file=" + dir_ + "/munged.seed").c_str(),
            "--num-threads=2", static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 500; ++i) {
      struct stat st {};
      if (::stat(socket().c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
        // Others (the test's unprivileged user) reach it through the directory.
        ::chmod(dir_.c_str(), 0755);
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  std::string socket() const { return dir_ + "/munge.sock"; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  pid_t pid_ = -1;
};

}  // namespace muster::testing
