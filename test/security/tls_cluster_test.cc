// A real cluster over TLS: the server with a certificate its CA signed, an
// agent and the CLI that verify it, the agent's log port on a certificate
// of its own that the server pins, and a job that reports progress back
// over HTTPS with the Python helper. What crosses the wire is recorded by
// a proxy and must hold none of the secrets; clients that cannot verify
// the server, and plain HTTP, get nowhere.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "../agent/agent_process.h"
#include "../server/server_process.h"
#include "../tcp_proxy.h"
#include "../tls_files.h"
#include "../wait_for.h"
#include "http/client.h"

namespace muster::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Made once for the test process and removed when it exits (never
// destroyed before that: the exit handler still reads it).
const TlsFiles& Files() {
  static const TlsFiles* files = [] {
    char dir[] = "/tmp/muster-tls-cluster-XXXXXX";
    const TlsFiles* f = new TlsFiles(MakeTlsFiles(::mkdtemp(dir)));
    std::atexit([] { std::filesystem::remove_all(Files().dir); });
    return f;
  }();
  return *files;
}

std::string TlsConfig() {
  return "rateLimit: {perSecond: 100000, burst: 100000}\nagents: {defaultGrace: 1s}\n"
         "tls: {cert: " +
         Files().cert + ", key: " + Files().key + "}\n";
}

class TlsClusterTest : public ::testing::Test {
 protected:
  TlsClusterTest() {
    EXPECT_EQ(Files().error, "");
    ::setenv("MUSTER_CA", Files().ca.c_str(), 1);  // for the CLI, agents and jobs this test starts
  }
  void SetUp() override {
    server_.listen_host = "0.0.0.0";  // allowed with TLS; and 127.0.0.2 reaches it
    ASSERT_TRUE(server_.Start()) << server_.log();
    ASSERT_EQ(server_.url().substr(0, 8), "https://");
  }
  void TearDown() override {
    if (agent_) agent_->Stop();
    if (HasFailure()) {
      std::cerr << "--- server log\n" << server_.log();
      if (agent_) std::cerr << "--- agent log\n" << agent_->log();
    }
  }
  void StartAgent(const std::string& url) {
    agent_ = std::make_unique<AgentProcess>(url, "tls-node", server_.dir() + "/agent");
    agent_->flags.push_back("--stop-tasks-on-exit");
    agent_->Start();
  }
  json Api(const std::string& method, const std::string& path, const std::string& body = "") {
    http::ClientOptions o;
    o.tls.ca_file = Files().ca;
    http::Client c(server_.url(), o);
    auto r = c.Send(method, path, {{"Authorization", "Bearer " + server_.admin_token()}}, body,
                    body.empty() ? "" : "application/yaml");
    EXPECT_TRUE(r.ok()) << path << ": " << r.status().message();
    return r.ok() ? json::parse(r->body, nullptr, false) : json();
  }
  json WaitFor(const std::string& path, const std::function<bool(const json&)>& done, int seconds = 30) {
    json j;
    if (muster::testing::WaitFor([&] { return done(j = Api("GET", path)); }, std::chrono::seconds(seconds), 50ms))
      return j;
    ADD_FAILURE() << path << " never got there: " << j.dump();
    return j;
  }
  CommandResult Cli(const std::string& args, const std::string& env = "") {
    return RunCommand(env + " " + std::string(MUSTER_BINARY) + " " + args);
  }

  ServerProcess server_{TlsConfig()};
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(TlsClusterTest, AJobRunsReportsAndIsReadOverVerifiedTlsWithNothingInTheClear) {
  // Everything the agent and the CLI send goes through the proxy.
  TcpProxy wire(server_.port());
  const std::string url = "https://localhost:" + std::to_string(wire.port());
  StartAgent(url);
  WaitFor("/v1/nodes", [](const json& j) { return j["items"].size() == 1; });

  const std::string python = std::filesystem::absolute("python").string();
  const std::string script = "import sys; sys.path.insert(0, '" + python +
                             "'); import muster_job as mj; "
                             "print('the-log-line', flush=True); mj.report(step=7, message='over-tls')";
  std::ofstream(server_.dir() + "/job.yaml") << "name: tls-job\nsecretEnv: {API_KEY: s3cr3t-in-transit}\n"
                                             << "command: [/usr/bin/python3, -c, " << json(script).dump() << "]\n";
  const CommandResult submitted = Cli("submit --parsable --server " + url + " -f " + server_.dir() + "/job.yaml");
  ASSERT_EQ(submitted.code, 0) << submitted.out;
  const int64_t id = std::atoll(LastLine(submitted.out).c_str());
  ASSERT_GT(id, 0) << submitted.out;
  const json done = WaitFor("/v1/jobs/" + std::to_string(id), [](const json& j) { return j["state"] == "COMPLETED"; });
  // The job's own report came back over HTTPS (MUSTER_CA from the agent).
  EXPECT_EQ(done["attemptHistory"][0].value("lastStep", int64_t{-1}), 7) << done.dump();

  // Its log: CLI -> server over TLS, server -> the agent's log port over
  // TLS to the key the agent reported.
  const CommandResult logs = Cli("logs --server " + url + " " + std::to_string(id));
  EXPECT_EQ(logs.code, 0) << logs.out;
  EXPECT_NE(logs.out.find("the-log-line"), std::string::npos) << logs.out;
  const json nodes = Api("GET", "/v1/nodes");
  const std::string pin = nodes["items"][0]["agent"].value("logTlsPin", "");
  EXPECT_EQ(pin.substr(0, 7), "sha256:") << nodes.dump();

  // What someone on the wire saw: TLS records, none of the secrets.
  const std::string seen = wire.Recorded();
  EXPECT_GT(seen.size(), 1000u);
  for (const std::string& secret :
       {server_.admin_token(), std::string("s3cr3t-in-transit"), std::string("the-log-line"),
        std::string("Authorization"), std::string("tls-job")}) {
    EXPECT_EQ(seen.find(secret), std::string::npos) << secret << " crossed the wire in the clear";
  }
}

TEST_F(TlsClusterTest, ClientsThatCannotVerifyTheServerGetNowhere) {
  const std::string url = server_.url();
  // No CA: the system's CAs do not vouch for the test's.
  CommandResult r = Cli("submit --server " + url + " -- true", "MUSTER_CA=");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("certificate verify failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--ca"), std::string::npos) << r.out;
  // Another CA given with --ca.
  r = Cli("get jobs --ca " + Files().stranger_ca + " --server " + url);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("certificate verify failed"), std::string::npos) << r.out;
  // A name the certificate does not carry.
  r = Cli("get jobs --server https://127.0.0.2:" + std::to_string(server_.port()));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("mismatch"), std::string::npos) << r.out;
  // Plain HTTP to the TLS port is told what to do.
  r = Cli("get jobs --server http://127.0.0.1:" + std::to_string(server_.port()));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("use https://"), std::string::npos) << r.out;
  // An agent without the CA never registers.
  agent_ = std::make_unique<AgentProcess>(url, "unverified", server_.dir() + "/agent");
  agent_->env["MUSTER_CA"] = Files().stranger_ca;
  agent_->Start();
  // Until it has tried (and said why it failed): however slow the machine.
  muster::testing::WaitFor([&] { return agent_->log().find("certificate verify failed") != std::string::npos; });
  EXPECT_NE(agent_->log().find("certificate verify failed"), std::string::npos) << agent_->log();
  EXPECT_EQ(Api("GET", "/v1/nodes")["items"].size(), 0u);
  EXPECT_EQ(Api("GET", "/v1/jobs")["items"].size(), 0u);
}

TEST_F(TlsClusterTest, TheAgentsLogPortSpeaksOnlyTlsToItsPin) {
  StartAgent(server_.url());
  const json nodes = WaitFor("/v1/nodes", [](const json& j) { return j["items"].size() == 1; });
  const int port = nodes["items"][0]["agent"].value("logPort", 0);
  const std::string pin = nodes["items"][0]["agent"].value("logTlsPin", "");
  ASSERT_GT(port, 0) << nodes.dump();
  // Plain HTTP: refused, told to use https.
  http::Client plain("127.0.0.1", port);
  auto r = plain.Get("/logs/j1.a1.r0");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 400);
  // With its pin: TLS holds, and still no log without the server's grant.
  http::ClientOptions o;
  o.tls.pin = pin;
  http::Client pinned("127.0.0.1", port, o, /*tls=*/true);
  r = pinned.Get("/logs/j1.a1.r0");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 403);
  // No CA vouches for it.
  http::ClientOptions ca;
  ca.tls.ca_file = Files().ca;
  http::Client verified("127.0.0.1", port, ca, /*tls=*/true);
  EXPECT_FALSE(verified.Get("/logs/j1.a1.r0").ok());
}

TEST(TlsServerConfig, PlainHttpBeyondLoopbackAndLooseKeysAreRefusedAtStart) {
  ASSERT_EQ(Files().error, "");
  const std::string dir = Files().dir;
  const auto start = [&](const std::string& config, const std::string& listen) {
    std::ofstream(dir + "/server.yaml") << "store: " << dir << "/refused.db\n" << config;
    return RunCommand("timeout 20 " + std::string(MUSTER_BINARY) + " server -c " + dir + "/server.yaml --listen " +
                      listen);
  };
  CommandResult r = start("", "0.0.0.0:0");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("listen: \"0.0.0.0\" is not a loopback address"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tls: {cert, key}"), std::string::npos) << r.out;
  r = start("tls: {cert: " + Files().cert + "}\n", "127.0.0.1:0");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("server.tls.key"), std::string::npos) << r.out;
  const std::string loose = dir + "/loose-server.key";
  std::filesystem::copy_file(Files().key, loose, std::filesystem::copy_options::overwrite_existing);
  ::chmod(loose.c_str(), 0644);
  r = start("tls: {cert: " + Files().cert + ", key: " + loose + "}\n", "0.0.0.0:0");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("server.tls.key"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mode 0644"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/refused.db"))
      << "a server that cannot serve as configured opened its store";
}

}  // namespace
}  // namespace muster::testing
