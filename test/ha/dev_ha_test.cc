// `muster dev --ha --demo`: a local PostgreSQL, three servers, the demo
// with the leader killed midway, end to end.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "../run_binary.h"

namespace muster::testing {
namespace {

namespace fs = std::filesystem;

TEST(DevHa, TheDemoSurvivesTheLeadersKillAndStopsCleanly) {
  if (std::system("/usr/bin/python3 -c 'import torch, sklearn' >/dev/null 2>&1") != 0) {
    GTEST_SKIP()
        << "Debian's python3-torch and python3-sklearn are not installed (scripts/install-deps.sh installs them)";
  }
  const std::string dir = ::testing::TempDir() + "/muster_dev_ha_" + std::to_string(getpid());
  fs::remove_all(dir);
  // Its credentials go to a token file of the test's own.
  const CommandResult r =
      RunCommand("MUSTER_TOKEN_FILE=" + dir + "/token MUSTER_MUNGE_SOCKET=none " + std::string(MUSTER_BINARY) +
                 " dev --ha --demo --exit-after-demo --nodes 4 --port 0 --dir " + dir);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("demo: killed the leader, server-"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("took over and answers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("demo: every job completed"), std::string::npos) << r.out;
  // Every process is gone: no server answers, PostgreSQL is stopped.
  for (int i = 1; i <= 3; ++i) {
    std::ifstream in(dir + "/port-" + std::to_string(i));
    int port = 0;
    ASSERT_TRUE(in >> port) << "server " << i << " wrote no port";
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(1, 0);
    EXPECT_FALSE(c.Get("/healthz")) << "server " << i << " still answers";
  }
  EXPECT_FALSE(fs::exists(dir + "/postgres/data/postmaster.pid")) << "PostgreSQL still runs";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace muster::testing
