// An attacker's tour of a real cluster: a real server, real agents running
// real processes, a munged of the test's own, and credentials forged,
// expired, revoked, replayed, stolen or used beyond their reach. Each
// attempt must be refused with a clear error and change nothing; the
// changes that are allowed, and the refusals, land in the audit log.
// (The holes listed in the security issue, one test or more each.)
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "../agent/cluster_fixture.h"
#include "../munged.h"
#include "../wait_for.h"
#include "api_call.h"
#include "auth/grants.h"
#include "auth/munge.h"
#include "auth/request_binding.h"
#include "auth/token.h"
#include "store/open_store.h"

namespace muster::testing {
namespace {

using nlohmann::json;

// One munged for the test process, stopped when it exits (each test runs
// in a process of its own under CTest).
MungeDaemon& Munged() {
  static MungeDaemon d;
  static const bool started = d.Start();
  EXPECT_TRUE(started);
  return d;
}

const char* SecureConfig() {
  static const std::string config =
      "rateLimit: {perSecond: 100000, burst: 100000}\n"
      "agents: {defaultGrace: 1s}\n"
      "admins: [root]\n"
      "auth:\n"
      "  munge: " +
      Munged().socket() +
      "\n"
      "  operators: [olga]\n"
      "  rootJobs: [root]\n"
      "  queues: {research: {users: [alice], admins: [carol]}}\n";
  return config.c_str();
}

class SecurityTest : public ClusterFixture {
 protected:
  SecurityTest() : ClusterFixture(SecureConfig()) {
    // Written into the store before the server starts: a token that has
    // expired (the API gives none shorter than a minute).
    auto store = store::OpenStore(server_.dir() + "/muster.db");
    EXPECT_TRUE(store.ok());
    const auth::Token t = auth::NewToken();
    expired_ = auth::FormatToken(t);
    store::WriteBatch b;
    b.tokens.push_back({t.id, auth::Sha256Hex(t.secret), "alice", "", "", "test", 1000, 2000, 0});
    EXPECT_TRUE(store->store->Commit({&b}).ok());
  }

  ApiAnswer Call(const std::string& method, const std::string& path, const std::string& token,
                 const std::string& body = "", httplib::Headers extra = {}) {
    return CallApi(server_.url(), method, path, token, body, "application/yaml", std::move(extra));
  }
  std::string Token(const std::string& user) {
    auto& t = tokens_[user];
    if (t.empty()) t = server_.UserToken(user);
    EXPECT_FALSE(t.empty()) << user;
    return t;
  }
  int64_t JobsStored() { return static_cast<int64_t>(Get("/v1/jobs?limit=1000")["items"].size()); }
  // A held job of `user` in `queue` (never runs: no Unix account needed).
  int64_t HeldJob(const std::string& user, const std::string& queue = "default") {
    const ApiAnswer a =
        Call("POST", "/v1/jobs", Token(user), "name: j\nqueue: " + queue + "\nhold: true\ncommand: [\"true\"]\n");
    EXPECT_EQ(a.status, 201) << a.text;
    return a.body.value("id", int64_t{0});
  }
  json Audit(const std::string& query = "") { return Get("/v1/audit?limit=1000" + query)["items"]; }
  static bool Has(const json& audit, const std::string& actor, const std::string& action, const std::string& outcome) {
    for (const json& a : audit) {
      if (a["actor"] == actor && a["action"] == action && a["outcome"] == outcome) return true;
    }
    return false;
  }

  std::string expired_;
  std::map<std::string, std::string> tokens_;
};

TEST_F(SecurityTest, NoCredentialOrAForgedOneChangesAndReadsNothing) {
  const int64_t job = HeldJob("alice");
  const int64_t before = JobsStored();
  const std::string job_path = "/v1/jobs/" + std::to_string(job);
  const std::string real = Token("bob");
  const std::string forged_id = "mst_0123456789abcdef_" + std::string(43, 'A');
  const std::string wrong_secret = real.substr(0, 21) + std::string(43, 'B');
  for (const std::string& token : {std::string(), forged_id, wrong_secret, expired_, std::string("msj_1_1_00"),
                                   std::string("Bearer"), std::string("mst_")}) {
    for (const auto& [method, path] :
         std::vector<std::pair<std::string, std::string>>{{"POST", "/v1/jobs"},
                                                          {"GET", "/v1/jobs"},
                                                          {"GET", job_path},
                                                          {"POST", job_path + "/cancel"},
                                                          {"GET", job_path + "/logs"},
                                                          {"POST", "/v1/nodes/" + Name(0) + "/drain"},
                                                          {"POST", "/v1/tokens"},
                                                          {"GET", "/v1/audit"}}) {
      const ApiAnswer a = Call(method, path, token, "command: [\"true\"]\n");
      EXPECT_EQ(a.status, 401) << method << " " << path << " with " << token.substr(0, 24) << ": " << a.text;
      EXPECT_FALSE(a.message().empty()) << a.text;
      if (token.size() > 30) {
        EXPECT_EQ(a.text.find(token.substr(21)), std::string::npos) << "a secret echoed";
      }
    }
  }
  // The header that named the user before authentication is refused, not ignored.
  ApiAnswer a = Call("POST", "/v1/jobs", "", "command: [\"true\"]\n", {{"X-Muster-User", "root"}});
  EXPECT_EQ(a.status, 401);
  EXPECT_NE(a.message().find("X-Muster-User"), std::string::npos) << a.text;
  a = Call("GET", "/v1/jobs", expired_);
  EXPECT_NE(a.message().find("expired"), std::string::npos) << a.text;
  EXPECT_EQ(JobsStored(), before);
  EXPECT_EQ(Get(job_path)["state"], "HELD");
  EXPECT_EQ(Call("GET", "/healthz", "").status, 200) << "probes need no credential";
}

TEST_F(SecurityTest, ARevokedTokenStopsWorkingAtOnce) {
  const ApiAnswer created = Call("POST", "/v1/tokens", Token("alice"), R"({"description": "laptop"})");
  ASSERT_EQ(created.status, 201) << created.text;
  const std::string laptop = created.body["token"];
  EXPECT_EQ(Call("GET", "/v1/whoami", laptop).body["user"], "alice");
  // Another user cannot revoke it, nor learn that it exists.
  EXPECT_EQ(Call("DELETE", "/v1/tokens/" + created.body["id"].get<std::string>(), Token("bob")).status, 404);
  EXPECT_EQ(Call("DELETE", "/v1/tokens/" + created.body["id"].get<std::string>(), Token("alice")).status, 200);
  const ApiAnswer after = Call("GET", "/v1/jobs", laptop);
  EXPECT_EQ(after.status, 401);
  EXPECT_NE(after.message().find("revoked"), std::string::npos) << after.text;
  // Users make tokens for themselves only; admins for anyone, and nodes'.
  EXPECT_EQ(Call("POST", "/v1/tokens", Token("alice"), R"({"user": "bob"})").status, 403);
  EXPECT_EQ(Call("POST", "/v1/tokens", Token("alice"), R"({"node": ")" + Name(0) + R"("})").status, 403);
  EXPECT_EQ(Call("POST", "/v1/tokens", Token("alice"), R"({"expiresIn": "never"})").status, 403);
  // Hers: the fixture's, the laptop's (revoked) and the expired one.
  EXPECT_EQ(Call("GET", "/v1/tokens", Token("alice")).body["items"].size(), 3u);
  EXPECT_TRUE(Has(Audit(), "alice", "token.revoke", "ok"));
  EXPECT_TRUE(Has(Audit(), "bob", "token.revoke", "NOT_FOUND"));
  EXPECT_TRUE(Has(Audit(), "alice", "token.create", "PERMISSION_DENIED"));
}

TEST_F(SecurityTest, UsersSeeAndActOnlyOnTheirOwnJobs) {
  const int64_t alices = HeldJob("alice", "research");
  const std::string path = "/v1/jobs/" + std::to_string(alices);
  for (const std::string verb : {"cancel", "release", "requeue"}) {
    const ApiAnswer a = Call("POST", path + "/" + verb, Token("bob"));
    EXPECT_EQ(a.status, 403) << verb << ": " << a.text;
    EXPECT_NE(a.message().find("only its owner"), std::string::npos) << a.text;
  }
  EXPECT_EQ(Call("GET", path, Token("bob")).status, 403);
  EXPECT_EQ(Call("GET", path + "/events", Token("bob")).status, 403);
  EXPECT_EQ(Call("GET", path + "/checkpoints", Token("bob")).status, 403);
  EXPECT_EQ(Call("GET", "/v1/jobs?user=alice", Token("bob")).status, 403);
  EXPECT_EQ(Call("GET", "/v1/jobs", Token("bob")).body["items"].size(), 0u) << "bob lists only his own jobs";
  EXPECT_EQ(Call("GET", "/v1/jobs?queue=research", Token("bob")).body["items"].size(), 0u);
  EXPECT_EQ(Get(path)["state"], "HELD");
  // The queue's admin and an operator may; so may the owner.
  EXPECT_EQ(Call("GET", "/v1/jobs?queue=research", Token("carol")).body["items"].size(), 1u);
  EXPECT_EQ(Call("GET", path, Token("carol")).status, 200);
  EXPECT_EQ(Call("GET", path, Token("olga")).status, 200);
  EXPECT_EQ(Call("POST", path + "/release", Token("alice")).status, 200);
  EXPECT_EQ(Call("POST", path + "/cancel", Token("carol")).status, 200);
  const json audit = Audit("&object=job/" + std::to_string(alices));
  EXPECT_TRUE(Has(audit, "bob", "cancel", "PERMISSION_DENIED")) << audit.dump();
  EXPECT_TRUE(Has(audit, "carol", "cancel", "ok")) << audit.dump();
  // Users read their own audit entries only.
  EXPECT_EQ(Call("GET", "/v1/audit?actor=carol", Token("bob")).status, 403);
  const ApiAnswer own = Call("GET", "/v1/audit", Token("bob"));
  ASSERT_FALSE(own.body["items"].empty());
  for (const json& a : own.body["items"]) EXPECT_EQ(a["actor"], "bob");
}

TEST_F(SecurityTest, QueuesAdmitTheirListedUsersAndRootJobsNeedConfiguration) {
  const int64_t before = JobsStored();
  ApiAnswer a = Call("POST", "/v1/jobs", Token("bob"), "queue: research\ncommand: [\"true\"]\n");
  EXPECT_EQ(a.status, 403) << a.text;
  EXPECT_NE(a.message().find("queue \"research\""), std::string::npos) << a.text;
  EXPECT_EQ(JobsStored(), before);
  EXPECT_TRUE(Has(Audit(), "bob", "submit", "PERMISSION_DENIED"));
  // A spec cannot name the user a job runs as: the field does not exist.
  a = Call("POST", "/v1/jobs", Token("bob"), "user: root\ncommand: [\"true\"]\n");
  EXPECT_EQ(a.status, 400) << a.text;
  // Operators drain and cordon; users do not; only admins declare nodes lost.
  AddAgent();
  WaitNodes(1);
  EXPECT_EQ(Call("POST", "/v1/nodes/" + Name(0) + "/cordon", Token("bob")).status, 403);
  EXPECT_EQ(Call("POST", "/v1/nodes/" + Name(0) + "/cordon", Token("olga")).status, 200);
  EXPECT_EQ(Call("POST", "/v1/nodes/" + Name(0) + "/uncordon", Token("olga")).status, 200);
  EXPECT_EQ(Call("POST", "/v1/nodes/" + Name(0) + "/declare-lost", Token("olga")).status, 403);
}

TEST(SecurityRoot, ARootJobIsRefusedUnlessConfigured) {
  ServerProcess server("auth: {munge: none}\n");
  ASSERT_TRUE(server.Start()) << server.log();
  httplib::Client c(server.url());
  auto r =
      c.Post("/v1/jobs", {{"Authorization", "Bearer " + server.admin_token()}}, "command: [id]\n", "application/yaml");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_NE(r->body.find("rootJobs"), std::string::npos) << r->body;
  // An admin may still submit for an ordinary user, and that is recorded.
  r = c.Post("/v1/jobs", {{"Authorization", "Bearer " + server.admin_token()}, {"X-Muster-Act-As", "alice"}},
             "hold: true\ncommand: [id]\n", "application/yaml");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(json::parse(r->body)["user"], "alice");
  r = c.Get("/v1/audit?object=job/1", {{"Authorization", "Bearer " + server.admin_token()}});
  const json audit = json::parse(r->body)["items"];
  ASSERT_EQ(audit.size(), 1u) << r->body;
  EXPECT_EQ(audit[0]["actor"], "root");
  EXPECT_EQ(audit[0]["asUser"], "alice");
  EXPECT_EQ(audit[0]["action"], "submit");
}

TEST_F(SecurityTest, OnlyAdminsActForOthers) {
  const ApiAnswer a = Call("POST", "/v1/jobs", Token("bob"), "command: [\"true\"]\n", {{"X-Muster-Act-As", "alice"}});
  EXPECT_EQ(a.status, 403) << a.text;
  // Refused before any handler, recorded just after the answer.
  EXPECT_TRUE(
      WaitFor([&] { return Has(Audit(), "bob", "POST /v1/jobs", "PERMISSION_DENIED"); }, std::chrono::seconds(2)));
}

TEST_F(SecurityTest, LogsOnlyForTheirOwnerAndOnlyThroughTheServer) {
  AddAgent();
  WaitNodes(1);
  const int64_t id = Submit("command: [/bin/sh, -c, 'echo the secret is 42; sleep 300']\n");
  WaitState(id, "RUNNING");
  WaitFor([&] { return Logs(id).find("secret") != std::string::npos; }, std::chrono::seconds(10));
  ASSERT_NE(Logs(id).find("the secret is 42"), std::string::npos);
  const std::string path = "/v1/jobs/" + std::to_string(id) + "/logs";
  EXPECT_EQ(Call("GET", path, Token("bob")).status, 403);
  EXPECT_EQ(Call("GET", path, Token("olga")).status, 403) << "operators manage jobs, not read them";
  // The agent's log port, straight: no grant, a forged one, another task's.
  const json node = Get("/v1/nodes")["items"][0]["agent"];
  const int port = node.value("logPort", 0);
  ASSERT_GT(port, 0) << node.dump();
  httplib::Client agent("127.0.0.1", port);
  const std::string task = "/logs/j" + std::to_string(id) + ".a1.r0";
  for (const httplib::Headers& h :
       {httplib::Headers{}, httplib::Headers{{"X-Muster-Grant", "99999999999999.abc"}},
        httplib::Headers{{"X-Muster-Grant", auth::SignLogGrant(std::string(64, 'a'),
                                                               "j" + std::to_string(id) + ".a1.r0", INT64_MAX / 2)}}}) {
    auto r = agent.Get(task, h);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 403) << r->body;
    EXPECT_EQ(r->body.find("secret"), std::string::npos);
  }
  auto traversal = agent.Get("/logs/..%2F..%2Fetc%2Fshadow");
  ASSERT_TRUE(traversal);
  EXPECT_EQ(traversal->body.find("root:"), std::string::npos);
  EXPECT_GE(traversal->status, 400);
  CancelAndWait(id);
}

TEST_F(SecurityTest, AnAgentSpeaksOnlyForItsOwnNode) {
  AgentProcess& real = AddAgent();
  WaitNodes(1);
  const int64_t id = Submit("resources: {gpus: 8}\ncommand: [sleep, '300']\n");
  WaitState(id, "RUNNING");
  // A second node's credential, in the attacker's hands.
  const std::string other = TokenFromServer(server_.url(), server_.admin_token(), "--node", "intruder");
  ASSERT_FALSE(other.empty());
  const std::string as_real = R"({"node":")" + real.name() +
                              R"(","agentId":"x","reportSeq":9223372036854775000,)"
                              R"("tasks":[{"job":)" +
                              std::to_string(id) +
                              R"(,"attempt":1,"replica":0,"running":false,)"
                              R"("exitCode":0}]})";
  httplib::Client c(server_.url());
  auto sync = [&](const std::string& token, const std::string& body) {
    return c.Post("/v1/agent/sync", {{"Authorization", "Bearer " + token}}, body, "application/json");
  };
  auto r = sync(other, as_real);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_NE(r->body.find("may not sync as node"), std::string::npos) << r->body;
  // A user's token (even an admin's) is not an agent's.
  r = sync(server_.admin_token(), as_real);
  EXPECT_EQ(r->status, 403) << r->body;
  r = c.Post("/v1/agent/sync", as_real, "application/json");
  EXPECT_EQ(r->status, 401) << r->body;
  // A node's credential reaches nothing else.
  r = c.Get("/v1/jobs", {{"Authorization", "Bearer " + other}});
  EXPECT_EQ(r->status, 403) << r->body;
  r = c.Post("/v1/jobs", {{"Authorization", "Bearer " + other}}, "command: [\"true\"]\n", "application/yaml");
  EXPECT_EQ(r->status, 403) << r->body;
  // The intruder registering itself with 16 GPUs gets work only as itself,
  // and what it reports about the real node's job is not believed.
  const std::string fake = R"({"node":"intruder","agentId":"y","reportSeq":1,"gpus":[],"cpuMilli":1000,)"
                           R"("memoryBytes":1000000000,"tasks":[{"job":)" +
                           std::to_string(id) + R"(,"attempt":1,"replica":0,"running":false,"exitCode":0}]})";
  r = sync(other, fake);
  EXPECT_EQ(r->status, 200) << r->body;
  // The answer came once the loop had processed the report: no wait.
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(id))["state"], "RUNNING") << "a report from another node ended the job";
  // The real agent still reports (its sequence was not taken over).
  CancelAndWait(id);
  EXPECT_TRUE(Has(Audit(), "node/intruder", "agent.sync", "PERMISSION_DENIED")) << Audit().dump();
}

TEST_F(SecurityTest, AJobTokenReachesOnlyItsOwnJob) {
  AddAgent();
  WaitNodes(1);
  const std::string out = Tmp("env.txt");
  const int64_t id = Submit("command: [/bin/sh, -c, 'env > " + out + "; sleep 300']\nenv: {MUSTER_TOKEN: forged}\n");
  const std::map<std::string, std::string> env = EnvOf(WaitFile(out));
  ASSERT_TRUE(env.count("MUSTER_TOKEN"));
  const std::string token = env.at("MUSTER_TOKEN");
  EXPECT_EQ(token.rfind("msj_" + std::to_string(id) + "_1_", 0), 0u) << "the spec's env must not replace it: " << token;
  const int64_t other = HeldJob("alice");
  const std::string progress = R"({"attempt": 1, "step": 3})";
  httplib::Client c(server_.url());
  const httplib::Headers h{{"Authorization", "Bearer " + token}};
  auto r = c.Post("/v1/jobs/" + std::to_string(id) + "/progress", h, progress, "application/json");
  EXPECT_EQ(r->status, 200) << r->body;
  r = c.Post("/v1/jobs/" + std::to_string(other) + "/progress", h, progress, "application/json");
  EXPECT_EQ(r->status, 403) << r->body;
  r = c.Post("/v1/jobs/" + std::to_string(id) + "/progress", h, R"({"attempt": 2, "step": 3})", "application/json");
  EXPECT_EQ(r->status, 403) << r->body;
  // It reads its own job (scontrol show job inside it), nothing else.
  r = c.Get("/v1/jobs/" + std::to_string(id), h);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->body.find(token), std::string::npos) << "its own token is never shown: " << r->body;
  for (const std::string& path : {std::string("/v1/jobs"), "/v1/jobs/" + std::to_string(other),
                                  std::string("/v1/nodes"), "/v1/jobs/" + std::to_string(id) + "/events"}) {
    r = c.Get(path, h);
    EXPECT_EQ(r->status, 403) << path << ": " << r->body;
  }
  r = c.Post("/v1/jobs/" + std::to_string(id) + "/cancel", h, "", "application/json");
  EXPECT_EQ(r->status, 403) << r->body;
  // Signed by another cluster's key: refused.
  r = c.Post("/v1/jobs/" + std::to_string(id) + "/progress",
             {{"Authorization", "Bearer " + auth::SignJobToken("another cluster", id, 1)}}, progress,
             "application/json");
  EXPECT_EQ(r->status, 401) << r->body;
  CancelAndWait(id);
}

TEST_F(SecurityTest, MungeCredentialsAreBoundToTheirRequestAndGoodOnce) {
  const std::string body = "hold: true\ncommand: [\"true\"]\n";
  auto cred = auth::MungeEncode(Munged().socket(), auth::RequestDigest("POST", "/v1/jobs", body));
  ASSERT_TRUE(cred.ok()) << cred.status().ToString();
  const std::string header = "MUNGE " + *cred;
  // Tampered: the same credential on another body or path.
  ApiAnswer a = Call("POST", "/v1/jobs", header, "hold: true\ncommand: [rm, -rf, /]\n");
  EXPECT_EQ(a.status, 401);
  EXPECT_NE(a.message().find("another request"), std::string::npos) << a.text;
  const int64_t before = JobsStored();
  // munged decoded it once already (above), so even the right request is a replay now.
  a = Call("POST", "/v1/jobs", header, body);
  EXPECT_EQ(a.status, 401) << a.text;
  EXPECT_NE(a.message().find("replayed"), std::string::npos) << a.text;
  EXPECT_EQ(JobsStored(), before);
  // A fresh one works once, as the Unix user who made it (root here).
  cred = auth::MungeEncode(Munged().socket(), auth::RequestDigest("POST", "/v1/jobs", body));
  a = Call("POST", "/v1/jobs", "MUNGE " + *cred, body);
  EXPECT_EQ(a.status, 201) << a.text;
  EXPECT_EQ(a.body["user"], "root");
  a = Call("POST", "/v1/jobs", "MUNGE " + *cred, body);
  EXPECT_EQ(a.status, 401) << a.text;
  // From another cluster's munged (another key): refused.
  MungeDaemon theirs;
  ASSERT_TRUE(theirs.Start());
  cred = auth::MungeEncode(theirs.socket(), auth::RequestDigest("GET", "/v1/jobs", ""));
  EXPECT_EQ(Call("GET", "/v1/jobs", "MUNGE " + *cred).status, 401);
}

// The CLI as an ordinary Unix user (nobody) on a node with munged: it is
// that user, whatever it claims, and can touch only its own jobs.
TEST_F(SecurityTest, AnUnprivilegedUnixUserIsThemselvesThroughMunge) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the CLI as another user";
  const int64_t roots = Submit("hold: true\ncommand: [\"true\"]\n");
  // As nobody, with the test's MUSTER_TOKEN (root's) in reach: munged's
  // socket comes first, so the CLI is nobody.
  const std::string as_nobody =
      "setpriv --reuid=65534 --regid=65534 --clear-groups env MUSTER_MUNGE_SOCKET=" + Munged().socket() +
      " MUSTER_TOKEN_FILE=/nonexistent HOME=/nonexistent " + MUSTER_BINARY;
  CommandResult r = RunCommand(as_nobody + " whoami --server " + server_.url());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("nobody (via munge"), std::string::npos) << r.out;
  r = RunCommand(as_nobody + " cancel " + std::to_string(roots) + " --server " + server_.url());
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("may not cancel"), std::string::npos) << r.out;
  r = RunCommand(as_nobody + " cancel " + std::to_string(roots) + " --as root --server " + server_.url());
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("only an admin may act for another user"), std::string::npos) << r.out;
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(roots))["state"], "HELD");
}

TEST_F(SecurityTest, InjectionAndTraversalAreInertData) {
  const int64_t job = HeldJob("alice");
  // Query filters are parameters, never SQL.
  for (const std::string q :
       {"/v1/audit?actor=x'%20OR%20'1'%3D'1", "/v1/jobs?user=x'%20OR%201%3D1%20--", "/v1/jobs?name=%25"}) {
    const json items = Get(q)["items"];
    EXPECT_TRUE(items.is_array() && items.empty()) << q << ": " << items.dump().substr(0, 300);
  }
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(job))["state"], "HELD");
  // Paths: a token id that climbs, a job id that is not one.
  EXPECT_EQ(Call("DELETE", "/v1/tokens/..%2F..%2Fetc", server_.admin_token()).status, 400);
  EXPECT_EQ(Call("DELETE", "/v1/tokens/..", server_.admin_token()).status, 404);
  EXPECT_EQ(Call("GET", "/v1/jobs/1%20OR%201", server_.admin_token()).status, 400);
  // The working directory and checkpoint paths of a spec.
  ApiAnswer a = Call("POST", "/v1/jobs", Token("alice"), "workingDir: ../../etc\ncommand: [\"true\"]\n");
  EXPECT_EQ(a.status, 400) << a.text;
  // A node name with a path in it, for a token.
  a = Call("POST", "/v1/tokens", server_.admin_token(), R"({"node": "../n1"})");
  EXPECT_EQ(a.status, 400) << a.text;
}

// A job sees only its GPUs, even with CUDA_VISIBLE_DEVICES unset and device
// nodes of its own making: the devices cgroup (v1) or device program (v2)
// denies the others by number. Device nodes made by the test stand in for
// /dev/nvidiaN (no driver here: an allowed open fails later, with ENXIO).
TEST_F(SecurityTest, AJobCannotOpenTheDeviceFilesOfGpusItWasNotGiven) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (mknod, cgroups)";
  AddAgent();
  WaitNodes(1);
  const std::string dev = Tmp("dev");
  std::filesystem::create_directories(dev);
  for (int minor = 0; minor < 8; ++minor) {
    const std::string node = dev + "/nvidia" + std::to_string(minor);
    ASSERT_EQ(RunCommand("mknod -m 666 " + node + " c 195 " + std::to_string(minor)).code, 0);
  }
  const std::string out = Tmp("opens.txt");
  const int64_t id =
      Submit("resources: {gpus: 2}\ncommand: [/bin/sh, -c, 'echo \"gpus $CUDA_VISIBLE_DEVICES\" > " + out +
             "; unset CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES; for i in 0 1 2 3 4 5 6 7; do "
             "( : 3<>" +
             dev + "/nvidia$i ) 2>> " + out + "; done; echo done >> " + out + "']\n");
  const json j = WaitEnd(id);
  std::string text;
  WaitFor(
      [&] {
        std::ifstream in(out);
        text.assign(std::istreambuf_iterator<char>(in), {});
        return text.find("done") != std::string::npos;
      },
      std::chrono::seconds(10));
  ASSERT_NE(text.find("done"), std::string::npos) << text << j.dump();
  // Which GPUs it was given: the fake UUIDs end with the index.
  std::set<int> given;
  const std::string line = text.substr(0, text.find('\n'));
  for (size_t at = line.find("GPU-"); at != std::string::npos; at = line.find("GPU-", at + 1)) {
    const size_t end = line.find(',', at);
    const std::string uuid = line.substr(at, end == std::string::npos ? std::string::npos : end - at);
    given.insert(std::stoi(uuid.substr(uuid.size() - 12), nullptr, 16));
  }
  ASSERT_EQ(given.size(), 2u) << line;
  for (int minor = 0; minor < 8; ++minor) {
    const std::string name = dev + "/nvidia" + std::to_string(minor);
    std::string said;
    for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
      said = text.substr(at, text.find('\n', at) - at);
    }
    if (given.count(minor)) {
      EXPECT_EQ(said.find("Operation not permitted"), std::string::npos) << "its own GPU " << minor << ": " << said;
    } else {
      EXPECT_NE(said.find("Operation not permitted"), std::string::npos)
          << "GPU " << minor << " is not its own: " << said;
    }
  }
}

// Each task has its own /tmp (the node's stays out of reach) and gains no
// privileges through what it runs (no_new_privs).
TEST_F(SecurityTest, ATaskHasItsOwnTmpAndNoNewPrivileges) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (mount namespaces)";
  const std::string marker = "/tmp/muster-node-file-" + std::to_string(::getpid());
  { std::ofstream(marker) << "the node's\n"; }
  AgentProcess& agent = AddAgent();
  (void)agent;
  agents_.back()->Stop();
  agents_.back()->shared_tmp = false;
  agents_.back()->Start();
  WaitNodes(1);
  const int64_t id = Submit("command: [/bin/sh, -c, 'echo mine > /tmp/own; ls -A /tmp; test -e " + marker +
                            " && echo node-visible; grep NoNewPrivs /proc/self/status']\n");
  const json j = WaitEnd(id);
  EXPECT_EQ(j["state"], "COMPLETED") << j.dump();
  const std::string logs = Logs(id);
  EXPECT_NE(logs.find("own"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("node-visible"), std::string::npos) << logs;
  EXPECT_NE(logs.find("NoNewPrivs:\t1"), std::string::npos) << logs;
  EXPECT_FALSE(std::filesystem::exists("/tmp/own")) << "the task wrote into the node's /tmp";
  std::filesystem::remove(marker);
  // Removed once the task ended.
  EXPECT_TRUE(WaitFor(
      [&] { return !std::filesystem::exists(agents_.back()->state_dir() + "/tmp/j" + std::to_string(id) + ".a1.r0"); },
      std::chrono::seconds(5)));
}

// Secrets: secretEnv values reach the job's processes and are never shown;
// the store, the agent's state (journals with environments, logs, the
// node's token) are readable by Muster only.
TEST_F(SecurityTest, SecretsAreNeverShownAndRestReadableByMusterOnly) {
  AddAgent();
  WaitNodes(1);
  const std::string out = Tmp("secret.txt");
  const int64_t id = Submit("command: [/bin/sh, -c, 'echo \"key=$API_KEY\" > " + out +
                            "; sleep 300']\n"
                            "env: {VISIBLE: plain}\nsecretEnv: {API_KEY: s3cr3t-v4lue}\n");
  EXPECT_NE(WaitFile(out).find("key=s3cr3t-v4lue"), std::string::npos) << "the job did not get its secret";
  for (const std::string& path :
       {"/v1/jobs/" + std::to_string(id), std::string("/v1/jobs"), std::string("/v1/jobs?view=summary")}) {
    const std::string text = Text(path);
    EXPECT_EQ(text.find("s3cr3t-v4lue"), std::string::npos) << path << ": " << text;
  }
  const json j = Get("/v1/jobs/" + std::to_string(id));
  EXPECT_EQ(j["secretEnv"]["API_KEY"], "(hidden)") << j.dump();
  EXPECT_EQ(j["env"]["VISIBLE"], "plain") << j.dump();
  // Another user does not even see the plain env.
  EXPECT_EQ(Call("GET", "/v1/jobs/" + std::to_string(id), Token("bob")).status, 403);
  EXPECT_EQ(Call("POST", "/v1/jobs", Token("bob"), "command: [x]\nenv: {A: 1}\nsecretEnv: {A: 2}\n").status, 400);
  // At rest.
  auto mode = [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 0777) : -1;
  };
  EXPECT_EQ(mode(server_.dir() + "/muster.db"), 0600);
  const std::string state = agents_.back()->state_dir();
  EXPECT_EQ(mode(state), 0700);
  for (const auto& e : std::filesystem::recursive_directory_iterator(state)) {
    if (!e.is_regular_file()) continue;
    EXPECT_EQ(mode(e.path().string()) & 077, 0) << e.path() << " is readable by others";
  }
  CancelAndWait(id);
}

}  // namespace
}  // namespace muster::testing
