// The REST API against a real server process on a free loopback port.
#include <httplib.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "../wait_for.h"
#include "server_process.h"

namespace muster::testing {
namespace {

using nlohmann::json;

const char* kCluster = R"(
nodeGroups:
  - {count: 2, gpus: 8, gpuType: H100, nodesPerLeaf: 2}
rateLimit: {perSecond: 100000, burst: 100000}
)";

// A client of `user`, with a token made for them (root: the test's admin
// token, MUSTER_TOKEN).
struct Api {
  explicit Api(const std::string& url, const std::string& user = "alice") : cli(url), user(user) {
    cli.set_read_timeout(10, 0);
    static std::map<std::pair<std::string, std::string>, std::string> tokens;
    const char* admin = std::getenv("MUSTER_TOKEN");
    std::string& t = tokens[{url, user}];
    if (t.empty())
      t = user == "root" ? std::string(admin ? admin : "") : TokenFromServer(url, admin ? admin : "", "--user", user);
    token = t;
  }
  httplib::Result Post(const std::string& path, const std::string& body, const std::string& type = "application/json",
                       httplib::Headers extra = {}) {
    extra.emplace("Authorization", "Bearer " + token);
    return cli.Post(path, extra, body, type);
  }
  httplib::Result Get(const std::string& path) {
    return cli.Get(path, httplib::Headers{{"Authorization", "Bearer " + token}});
  }
  json GetJson(const std::string& path) {
    auto r = Get(path);
    EXPECT_TRUE(r) << path;
    return r ? json::parse(r->body) : json();
  }
  httplib::Client cli;
  std::string user;
  std::string token;
};

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.Start()) << server_.log(); }
  int64_t JobCount() {
    Api api(server_.url(), "root");
    return static_cast<int64_t>(api.GetJson("/v1/jobs?limit=1000")["items"].size());
  }
  ServerProcess server_{kCluster};
};

// Many clients connect at once (every agent after a server restart): the
// listening socket's queue must hold them, not cpp-httplib's 5, past which
// connections wait a second for a retried SYN. `ss` shows the queue's size.
TEST_F(ApiTest, TheListeningSocketQueuesManyConnections) {
  const std::string cmd = "ss -ltnH 'sport = :" + std::to_string(server_.port()) + "' 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char line[512] = {};
  const bool got = std::fgets(line, sizeof line, p) != nullptr;
  ::pclose(p);
  if (!got) GTEST_SKIP() << "ss (iproute2) is not available";
  char state[32] = {};
  long recv_q = 0, backlog = 0;
  ASSERT_EQ(std::sscanf(line, "%31s %ld %ld", state, &recv_q, &backlog), 3) << line;
  EXPECT_STREQ(state, "LISTEN");
  EXPECT_GE(backlog, 128) << line;
}

// GET /v1/openapi.json describes every route the server serves under /v1
// and no other (server/openapi_check.h), and what it says of a plain GET
// holds: the path answers.
TEST_F(ApiTest, TheOpenApiDescriptionMatchesTheRoutesServed) {
  Api api(server_.url(), "root");
  const json doc = api.GetJson("/v1/openapi.json");
  EXPECT_EQ(doc.value("openapi", ""), "3.0.3");
  EXPECT_FALSE(doc.contains("x-muster-drift")) << doc["x-muster-drift"].dump(1);
  ASSERT_TRUE(doc.contains("paths"));
  int answered = 0;
  for (const auto& [path, item] : doc["paths"].items()) {
    if (path.find('{') != std::string::npos || !item.contains("get")) continue;
    auto r = api.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_NE(r->status, 404) << path << ": " << r->body;
    EXPECT_NE(r->status, 405) << path << ": " << r->body;
    ++answered;
  }
  EXPECT_GT(answered, 10);
}

TEST_F(ApiTest, SubmitGetListAndEvents) {
  Api api(server_.url());
  auto r = api.Post("/v1/jobs", R"j({"name":"train","command":["python","train.py"],"replicas":2,
                                   "resources":{"gpus":8,"gpuType":"H100"},"timeLimit":"2h"})j");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  const json job = json::parse(r->body);
  EXPECT_EQ(job["name"], "train");
  EXPECT_EQ(job["user"], "alice");
  EXPECT_GT(job["id"].get<int64_t>(), 0);
  EXPECT_TRUE(job.contains("submitTime"));
  const std::string id = std::to_string(job["id"].get<int64_t>());
  EXPECT_EQ(r->get_header_value("Location"), "/v1/jobs/" + id);

  // YAML works the same.
  r = api.Post("/v1/jobs", "name: small\ncommand: [sleep, '1']\nresources: {gpus: 1}\ntimeLimit: 10m\n",
               "application/yaml");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;

  // The scheduler starts the gang on both nodes shortly.
  json got;
  WaitFor(
      [&] {
        got = api.GetJson("/v1/jobs/" + id);
        return got["state"] == "RUNNING";
      },
      std::chrono::seconds(10));
  EXPECT_EQ(got["state"], "RUNNING") << got.dump();
  EXPECT_EQ(got["allocations"].size(), 2u);
  EXPECT_EQ(got["attempts"], 1);
  // The job's state comes from the control loop; its events from the store,
  // where the scheduler's write lands a moment later.
  json events;
  WaitFor(
      [&] {
        events = api.GetJson("/v1/jobs/" + id + "/events");
        return events["items"].size() >= 2;
      },
      std::chrono::seconds(10));
  ASSERT_GE(events["items"].size(), 2u);
  EXPECT_EQ(events["items"][0]["type"], "Submitted");
  EXPECT_EQ(events["items"][1]["type"], "Started");
  EXPECT_EQ(events["continue"], "");
  // In pages: one at a time, the token naming where the next begins.
  const json first = api.GetJson("/v1/jobs/" + id + "/events?limit=1");
  ASSERT_EQ(first["items"].size(), 1u);
  EXPECT_EQ(first["items"][0]["type"], "Submitted");
  ASSERT_NE(first["continue"], "");
  const json second =
      api.GetJson("/v1/jobs/" + id + "/events?limit=1&continue=" + first["continue"].get<std::string>());
  ASSERT_EQ(second["items"].size(), 1u);
  EXPECT_EQ(second["items"][0]["type"], "Started");

  // The small one waits; its reason has numbers and a planned start.
  json pending;
  WaitFor(
      [&] {
        pending = api.GetJson("/v1/jobs/" + std::to_string(job["id"].get<int64_t>() + 1));
        return pending.contains("reasonDetail") && pending.contains("plannedStart");
      },
      std::chrono::seconds(10));
  EXPECT_EQ(pending["state"], "PENDING");
  EXPECT_NE(pending["reasonDetail"].get<std::string>().find("need 1 GPU"), std::string::npos) << pending.dump();
  EXPECT_TRUE(pending.contains("plannedStart"));
  EXPECT_EQ(pending["priorityBreakdown"]["class"], 10000);

  // Filters and pagination.
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(api.Post("/v1/jobs", R"j({"command":["true"],"queue":"other","resources":{"gpus":8}})j")->status, 201);
  }
  json page = api.GetJson("/v1/jobs?queue=other&limit=2");
  ASSERT_EQ(page["items"].size(), 2u);
  std::set<int64_t> seen;
  std::string cont = page["continue"];
  for (const json& j : page["items"]) seen.insert(j["id"].get<int64_t>());
  while (!cont.empty()) {
    page = api.GetJson("/v1/jobs?queue=other&limit=2&continue=" + cont);
    for (const json& j : page["items"]) seen.insert(j["id"].get<int64_t>());
    cont = page["continue"];
  }
  EXPECT_EQ(seen.size(), 5u);
  // Newest first, in pages going down.
  std::vector<int64_t> newest;
  cont = "";
  do {
    page = api.GetJson("/v1/jobs?queue=other&limit=2&order=newest&continue=" + cont);
    for (const json& j : page["items"]) newest.push_back(j["id"].get<int64_t>());
    cont = page["continue"];
  } while (!cont.empty());
  ASSERT_EQ(newest.size(), 5u);
  EXPECT_TRUE(std::is_sorted(newest.rbegin(), newest.rend())) << json(newest).dump();
  EXPECT_EQ(newest.front(), *seen.rbegin());
  // The last page's empty token, sent back, is the first page again (the
  // same jobs: a cycle between the two asks may have given one its reason).
  auto ids = [](const json& items) {
    std::vector<int64_t> out;
    for (const json& j : items) out.push_back(j["id"].get<int64_t>());
    return out;
  };
  EXPECT_EQ(ids(api.GetJson("/v1/jobs?queue=other&limit=2&continue=")["items"]),
            ids(api.GetJson("/v1/jobs?queue=other&limit=2")["items"]));
  EXPECT_EQ(api.GetJson("/v1/jobs?state=RUNNING")["items"].size(), 1u);
  EXPECT_EQ(api.GetJson("/v1/jobs?state=running,pending")["items"].size(), 7u);
  // The summary view: the same jobs, a table's fields only.
  const json full = api.GetJson("/v1/jobs?state=RUNNING")["items"][0];
  const json summary = api.GetJson("/v1/jobs?state=RUNNING&view=summary")["items"][0];
  for (const char* k :
       {"id", "name", "user", "queue", "priority", "state", "reason", "submitTime", "startTime", "replicas"}) {
    EXPECT_EQ(summary[k], full[k]) << k;
  }
  EXPECT_EQ(summary["gpus"], full["resources"]["gpus"]);
  ASSERT_EQ(summary["nodes"].size(), full["allocations"].size());
  EXPECT_EQ(summary["nodes"][0], full["allocations"][0]["node"]);
  EXPECT_FALSE(summary.contains("command"));
  EXPECT_EQ(api.GetJson("/v1/jobs?view=summary&state=running,pending")["items"].size(), 7u);
  EXPECT_EQ(api.GetJson("/v1/nodes")["items"].size(), 2u);
  EXPECT_EQ(api.GetJson("/v1/queues")["items"].size(), 2u);
  EXPECT_EQ(api.GetJson("/healthz")["status"], "ok");
}

TEST_F(ApiTest, IdempotencyKeyReplaysAndRejectsADifferentBody) {
  Api api(server_.url());
  const std::string body = R"j({"command":["true"]})j";
  auto first = api.Post("/v1/jobs", body, "application/json", {{"Idempotency-Key", "k-1"}});
  ASSERT_EQ(first->status, 201);
  auto again = api.Post("/v1/jobs", body, "application/json", {{"Idempotency-Key", "\"k-1\""}});
  ASSERT_EQ(again->status, 200) << again->body;
  EXPECT_EQ(json::parse(again->body)["id"], json::parse(first->body)["id"]);
  auto other = api.Post("/v1/jobs", R"j({"command":["false"]})j", "application/json", {{"Idempotency-Key", "k-1"}});
  ASSERT_EQ(other->status, 422) << other->body;
  EXPECT_EQ(json::parse(other->body)["error"]["code"], "IdempotencyKeyReused");
  // Keys belong to their user.
  Api bob(server_.url(), "bob");
  EXPECT_EQ(bob.Post("/v1/jobs", body, "application/json", {{"Idempotency-Key", "k-1"}})->status, 201);
  EXPECT_EQ(JobCount(), 2);
}

TEST_F(ApiTest, ArraySubmitsConsecutiveJobsInOneDurableRequest) {
  Api api(server_.url());
  const std::string body = R"j({"name":"sweep","command":["python","sweep.py"],"array":5,"resources":{"gpus":8}})j";
  auto r = api.Post("/v1/jobs", body, "application/json", {{"Idempotency-Key", "sweep-1"}});
  ASSERT_EQ(r->status, 201) << r->body;
  const json first = json::parse(r->body);
  const int64_t id = first["id"];
  EXPECT_EQ(first["arrayFirstId"], id);
  EXPECT_EQ(first["arrayLastId"], id + 4);
  EXPECT_EQ(first["arrayIndex"], 0);
  const json jobs = api.GetJson("/v1/jobs?name=sweep");
  ASSERT_EQ(jobs["items"].size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(jobs["items"][i]["id"], id + i);
    EXPECT_EQ(jobs["items"][i]["arrayIndex"], i);
    EXPECT_EQ(jobs["items"][i]["arrayFirstId"], id);
    EXPECT_EQ(jobs["items"][i]["array"], 5);
  }
  // A retry gets the same array back, not a second one.
  auto again = api.Post("/v1/jobs", body, "application/json", {{"Idempotency-Key", "sweep-1"}});
  ASSERT_EQ(again->status, 200);
  EXPECT_EQ(json::parse(again->body)["arrayFirstId"], id);
  EXPECT_EQ(json::parse(again->body)["arrayLastId"], id + 4);
  EXPECT_EQ(JobCount(), 5);
  // Restarted, the tasks keep their place in the array, also a task that
  // starts only after the restart (two of 8 GPUs run at a time).
  server_.Kill();
  ASSERT_TRUE(server_.Start());
  Api after(server_.url());
  ASSERT_EQ(after.Post("/v1/jobs/" + std::to_string(id) + "/cancel", "")->status, 200);
  WaitFor([&] { return after.GetJson("/v1/jobs/" + std::to_string(id + 2))["state"] == "RUNNING"; },
          std::chrono::seconds(10));
  ASSERT_EQ(after.GetJson("/v1/jobs/" + std::to_string(id + 2))["state"], "RUNNING");
  const json restored = after.GetJson("/v1/jobs?name=sweep");
  ASSERT_EQ(restored["items"].size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(restored["items"][i]["arrayIndex"], i) << restored["items"][i].dump();
}

TEST_F(ApiTest, ActionsFollowTheStateMachineAndOwnership) {
  Api alice(server_.url()), bob(server_.url(), "bob"), root(server_.url(), "root");
  auto r = alice.Post("/v1/jobs", R"j({"command":["true"],"resources":{"gpus":8},"replicas":2})j");
  const std::string running = std::to_string(json::parse(r->body)["id"].get<int64_t>());
  r = alice.Post("/v1/jobs", R"j({"command":["true"],"resources":{"gpus":1}})j");
  const std::string pending = std::to_string(json::parse(r->body)["id"].get<int64_t>());
  WaitFor([&] { return alice.GetJson("/v1/jobs/" + running)["state"] == "RUNNING"; }, std::chrono::seconds(10));
  auto act = [](Api& who, const std::string& id, const std::string& verb) {
    auto res = who.Post("/v1/jobs/" + id + "/" + verb, "");
    return std::make_pair(res->status, json::parse(res->body));
  };
  EXPECT_EQ(act(bob, pending, "hold").first, 403);
  auto [st, body] = act(alice, pending, "hold");
  EXPECT_EQ(st, 200);
  EXPECT_EQ(body["state"], "HELD");
  EXPECT_EQ(act(alice, pending, "hold").first, 200);  // idempotent
  EXPECT_EQ(act(alice, pending, "requeue").first, 409);
  EXPECT_EQ(act(alice, pending, "release").second["state"], "PENDING");
  EXPECT_EQ(act(alice, running, "requeue").second["state"], "PENDING");
  WaitFor([&] { return alice.GetJson("/v1/jobs/" + running)["state"] == "RUNNING"; }, std::chrono::seconds(10));
  EXPECT_EQ(alice.GetJson("/v1/jobs/" + running)["state"], "RUNNING");
  EXPECT_EQ(act(root, running, "cancel").second["state"], "CANCELLED");  // admin
  EXPECT_EQ(act(alice, running, "cancel").first, 409);                   // already ended
  EXPECT_EQ(act(alice, "999999", "cancel").first, 404);
  // Submitted held: its answer already says why it waits, and its events say it was held.
  r = alice.Post("/v1/jobs", R"j({"command":["true"],"hold":true})j");
  ASSERT_EQ(r->status, 201) << r->body;
  const json held = json::parse(r->body);
  EXPECT_EQ(held["state"], "HELD");
  EXPECT_EQ(held["reason"], "Held");
  const json held_events = alice.GetJson("/v1/jobs/" + std::to_string(held["id"].get<int64_t>()) + "/events");
  ASSERT_EQ(held_events["items"].size(), 2u) << held_events.dump();
  EXPECT_EQ(held_events["items"][1]["type"], "Held");
  const json events = alice.GetJson("/v1/jobs/" + running + "/events");
  std::vector<std::string> types;
  for (const json& e : events["items"]) types.push_back(e["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"Submitted", "Started", "Requeued", "Started", "Cancelled"}));
}

// Malformed and hostile requests: each gets a clear error in the one error
// shape, and none changes anything.
TEST_F(ApiTest, BadInputIsRejectedClearlyAndChangesNothing) {
  Api api(server_.url());
  ASSERT_EQ(api.Post("/v1/jobs", R"j({"command":["true"]})j")->status, 201);
  struct Case {
    std::string method, path, body, type;
    int status;
    std::string field;    // expected error field ("" = any)
    std::string message;  // substring of the message
  };
  const std::string big((1 << 20) + (256 << 10), 'x');  // over the 1 MiB limit
  const std::vector<Case> cases = {
      {"POST", "/v1/jobs", R"j({"command":["x"],"resources":{"gpus":"eight"}})j", "application/json", 400,
       "spec.resources.gpus", "got \"eight\""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"resources":{"gpus":-1}})j", "application/json", 400,
       "spec.resources.gpus", "from 0 to 1024"},
      {"POST", "/v1/jobs", R"j({"command":["x"],"resources":{"gpus":1.5}})j", "application/json", 400,
       "spec.resources.gpus", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"resources":{"gpus":99999999999999999999}})j", "application/json", 400,
       "spec.resources.gpus", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"replicas":0})j", "application/json", 400, "spec.replicas", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"replicas":100000})j", "application/json", 400, "spec.replicas", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"resources":{"gpu":1}})j", "application/json", 400,
       "spec.resources.gpu", "did you mean \"gpus\""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"replica":2})j", "application/json", 400, "spec.replica",
       "did you mean \"replicas\""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"resources":{"memory":"lots"}})j", "application/json", 400,
       "spec.resources.memory", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"resources":{"cpus":"-2"}})j", "application/json", 400,
       "spec.resources.cpus", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"timeLimit":"soon"})j", "application/json", 400, "spec.timeLimit", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"timeLimit":0})j", "application/json", 400, "spec.timeLimit", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"timeLimit":"400d"})j", "application/json", 400, "spec.timeLimit", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"topology":"rack"})j", "application/json", 400, "spec.topology", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"priority":"urgent"})j", "application/json", 400, "spec.priority",
       "unknown priority class"},
      {"POST", "/v1/jobs", R"j({"command":["x"],"dependencies":"afterok:"})j", "application/json", 400,
       "spec.dependencies", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"dependencies":"sometimes:1"})j", "application/json", 400,
       "spec.dependencies", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"dependencies":"afterok:424242"})j", "application/json", 400,
       "spec.dependencies[0].job", "unknown job"},
      {"POST", "/v1/jobs", R"j({"command":["x"],"env":{"1BAD":"v"}})j", "application/json", 400, "", "env"},
      {"POST", "/v1/jobs", R"j({"command":["x"],"name":"$(rm -rf /)"})j", "application/json", 400, "spec.name", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"name":"'; DROP TABLE jobs; --"})j", "application/json", 400,
       "spec.name", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"name":"<script>alert(1)</script>"})j", "application/json", 400,
       "spec.name", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"name":"../../etc/passwd"})j", "application/json", 400, "spec.name",
       ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"name":""})j", "application/json", 400, "spec.name", ""},
      {"POST", "/v1/jobs", R"j({"command":[],"name":"a"})j", "application/json", 400, "spec.command", ""},
      {"POST", "/v1/jobs", R"j({"name":"a"})j", "application/json", 400, "spec", "command"},
      {"POST", "/v1/jobs", R"j({"command":["x"],"script":"echo"})j", "application/json", 400, "spec", ""},
      {"POST", "/v1/jobs", R"j({"command":[1,2]})j", "application/json", 400, "spec.command[0]", ""},
      {"POST", "/v1/jobs", R"j({"command":"x"})j", "application/json", 400, "spec.command", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"hold":"yes"})j", "application/json", 400, "spec.hold", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"beginTime":"tomorrow"})j", "application/json", 400, "spec.beginTime",
       ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"checkpoint":{"dir":"/c","signal":"SIGKILL"}})j", "application/json",
       400, "spec.checkpoint.signal", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"],"retry":{"limit":1000}})j", "application/json", 400, "spec.retry.limit",
       ""},
      {"POST", "/v1/jobs", R"j({"command":["x"])j", "application/json", 400, "spec", ""},
      {"POST", "/v1/jobs", R"j({"command":["x"]} trailing)j", "application/json", 400, "spec", ""},
      {"POST", "/v1/jobs", "[1,2,3]", "application/json", 400, "spec", ""},
      {"POST", "/v1/jobs", "null", "application/json", 400, "spec", ""},
      {"POST", "/v1/jobs", "", "application/json", 400, "spec", ""},
      {"POST", "/v1/jobs", "command: [x\n  bad: indent", "application/yaml", 400, "spec", ""},
      {"POST", "/v1/jobs", "command: 'unclosed\n", "application/yaml", 400, "spec.command", ""},
      {"POST", "/v1/jobs", std::string(2000, '['), "application/json", 400, "spec", ""},
      {"POST", "/v1/jobs", "command=x", "application/x-www-form-urlencoded", 415, "header Content-Type",
       "must be application/json or application/yaml"},
      {"POST", "/v1/jobs", R"j({"command":["x"]})j", "text/plain", 415, "header Content-Type", "got \"text/plain\""},
      {"POST", "/v1/jobs", "{\"command\":[\"" + big + "\"]}", "application/json", 413, "", "over the limit"},
      {"POST", "/v1/jobs?dryrun=1", R"j({"command":["x"]})j", "application/json", 400, "query.dryrun",
       "unknown query parameter"},
      {"GET", "/v1/jobs?stat=RUNNING", "", "", 400, "query.stat", "did you mean \"state\""},
      {"GET", "/v1/jobs?state=SLEEPING", "", "", 400, "query.state", "unknown state"},
      {"GET", "/v1/jobs?limit=0", "", "", 400, "query.limit", ""},
      {"GET", "/v1/jobs?limit=abc", "", "", 400, "query.limit", ""},
      {"GET", "/v1/jobs?continue=-5", "", "", 400, "query.continue", ""},
      {"GET", "/v1/jobs?view=tiny", "", "", 400, "query.view", "must be full or summary"},
      {"GET", "/v1/jobs?order=sideways", "", "", 400, "query.order", "must be oldest or newest"},
      {"GET", "/v1/usage?from=yesterday", "", "", 400, "query.from", "must be an RFC 3339 time"},
      {"GET", "/v1/usage?by=team", "", "", 400, "query.by", "must be queue, user"},
      {"GET", "/v1/usage?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", "", "", 400, "query.from",
       "must be before to"},
      {"GET", "/v1/jobs/1/logs?tail=-1", "", "", 400, "query.tail", ""},
      {"GET", "/v1/jobs/1/logs?replica=first", "", "", 400, "query.replica", ""},
      {"GET", "/v1/jobs/1/logs?attempt=0", "", "", 400, "query.attempt", "must be an integer from 1 to 1000000"},
      {"GET", "/v1/jobs/1/logs?follow=1", "", "", 400, "query.follow", "unknown query parameter"},
      // Routes without query parameters refuse any (they were ignored), and none may come twice.
      {"GET", "/v1/jobs/1/events?limit=0", "", "", 400, "query.limit", "must be an integer from 1 to 10000"},
      {"GET", "/v1/events?limit=10001", "", "", 400, "query.limit", "must be an integer from 1 to 10000"},
      {"GET", "/v1/jobs/1/events?since=1", "", "", 400, "query.since", "unknown query parameter"},
      {"POST", "/v1/jobs/1/cancel?force=1", "", "application/json", 400, "query.force", "unknown query parameter"},
      {"GET", "/v1/nodes?bogus=1", "", "", 400, "query.bogus", "unknown query parameter"},
      {"GET", "/healthz?x=1", "", "", 400, "query.x", "unknown query parameter"},
      {"GET", "/v1/jobs?state=PENDING&state=HELD", "", "", 400, "query.state",
       "given more than once; list several values with commas"},
      {"GET", "/v1/jobs/abc", "", "", 400, "path.id", ""},
      {"GET", "/v1/jobs/0", "", "", 400, "path.id", ""},
      {"GET", "/v1/jobs/99999", "", "", 404, "", "does not exist"},
      {"POST", "/v1/jobs/1/explode", "", "application/json", 404, "", "no such endpoint"},
      {"GET", "/v2/jobs", "", "", 404, "", "no such endpoint"},
      // Percent-escapes that decode to bytes that are not UTF-8, or to control characters
      // (the first of these stopped the server: its error could not be written as JSON).
      {"GET", "/%FF", "", "", 404, "", "no such endpoint: GET \"/\\xff\""},
      {"GET", "/v1/jobs?na%FFme=1", "", "", 400, "", "unknown query parameter"},
      {"POST", "/v1/jobs?%FF=1", R"j({"command":["x"]})j", "application/json", 400, "", "unknown query parameter"},
      {"GET", "/v1/jobs/%01", "", "", 400, "", "control character"},
      {"DELETE", "/v1/jobs/1/cancel", "", "", 405, "", "use POST"},
      {"POST", "/v1/jobs/99999/cancel", "", "application/json", 404, "", "does not exist"},
  };
  ASSERT_GE(cases.size(), 40u);
  const int64_t before = JobCount();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.method + " " + c.path + " " + c.body.substr(0, 80));
    auto r = c.method == "GET"    ? api.Get(c.path)
             : c.method == "POST" ? api.Post(c.path, c.body, c.type)
                                  : api.cli.Delete(c.path, {{"Authorization", "Bearer " + api.token}});
    ASSERT_TRUE(r) << "no answer";
    EXPECT_EQ(r->status, c.status) << r->body.substr(0, 300);
    const json body = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(body.is_object() && body.contains("error")) << r->body.substr(0, 300);
    const json& e = body["error"];
    EXPECT_TRUE(e.contains("code") && e.contains("message"));
    if (!c.field.empty()) {
      EXPECT_EQ(e.value("field", ""), c.field) << r->body.substr(0, 300);
    }
    if (!c.message.empty()) {
      EXPECT_NE(e["message"].get<std::string>().find(c.message), std::string::npos) << r->body.substr(0, 300);
    }
  }
  // The header that named the user before authentication: refused, even
  // beside a valid credential.
  httplib::Client raw(server_.url());
  auto r =
      raw.Post("/v1/jobs", httplib::Headers{{"X-Muster-User", "root"}}, R"j({"command":["x"]})j", "application/json");
  EXPECT_EQ(r->status, 401);
  r = raw.Post("/v1/jobs", httplib::Headers{{"X-Muster-User", "mallory"}, {"Authorization", "Bearer " + api.token}},
               R"j({"command":["x"]})j", "application/json");
  EXPECT_EQ(r->status, 401);
  EXPECT_NE(r->body.find("X-Muster-User header is not a credential"), std::string::npos) << r->body;
  EXPECT_EQ(JobCount(), before) << "a rejected request changed the state";
  EXPECT_EQ(api.GetJson("/healthz")["status"], "ok");
}

TEST(ApiRateLimit, ExcessRequestsGet429WithRetryAfter) {
  ServerProcess server("rateLimit: {perSecond: 5, burst: 5}\n");
  ASSERT_TRUE(server.Start()) << server.log();
  httplib::Client cli(server.url());
  const httplib::Headers admin = {{"Authorization", "Bearer " + server.admin_token()}};
  int limited = 0;
  for (int i = 0; i < 30; ++i) {
    auto r = cli.Get("/v1/queues", admin);
    ASSERT_TRUE(r);
    if (r->status == 429) {
      ++limited;
      EXPECT_EQ(r->get_header_value("Retry-After"), "1");
      EXPECT_EQ(json::parse(r->body)["error"]["code"], "TooManyRequests");
    }
  }
  EXPECT_GE(limited, 20);
  // A liveness probe is never refused for the clients' load: a 429 would
  // have the server restarted as dead.
  for (int i = 0; i < 30; ++i) {
    auto r = cli.Get("/healthz");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << i;
  }
}

TEST(ServerRestart, AcknowledgedJobsAndRunningPlacementsSurviveKill9) {
  ServerProcess server(kCluster);
  ASSERT_TRUE(server.Start()) << server.log();
  std::vector<int64_t> ids;
  {
    Api api(server.url());
    for (int i = 0; i < 20; ++i) {
      auto r = api.Post("/v1/jobs", R"j({"command":["true"],"resources":{"gpus":4},"timeLimit":"1h"})j",
                        "application/json", {{"Idempotency-Key", "restart-" + std::to_string(i)}});
      ASSERT_EQ(r->status, 201);
      ids.push_back(json::parse(r->body)["id"]);
    }
    WaitFor([&] { return api.GetJson("/v1/jobs?state=RUNNING")["items"].size() >= 4; }, std::chrono::seconds(10));
  }
  Api before(server.url());
  const json running_before = before.GetJson("/v1/jobs?state=RUNNING")["items"];
  ASSERT_EQ(running_before.size(), 4u);
  server.Kill();
  ASSERT_TRUE(server.Start()) << server.log();
  Api api(server.url());
  const json all = api.GetJson("/v1/jobs?limit=1000")["items"];
  ASSERT_EQ(all.size(), ids.size());
  const json running_after = api.GetJson("/v1/jobs?state=RUNNING")["items"];
  ASSERT_EQ(running_after.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(running_after[i]["id"], running_before[i]["id"]);
    EXPECT_EQ(running_after[i]["allocations"], running_before[i]["allocations"]);
  }
  // The restored state keeps scheduling: cancel one running job, a pending one starts.
  ASSERT_EQ(api.Post("/v1/jobs/" + running_after[0]["id"].dump() + "/cancel", "")->status, 200);
  WaitFor([&] { return api.GetJson("/v1/jobs?state=RUNNING")["items"].size() >= 4; }, std::chrono::seconds(10));
  EXPECT_EQ(api.GetJson("/v1/jobs?state=RUNNING")["items"].size(), 4u);
  // Every job keeps its idempotency key, also one that started after the restart,
  // and a retry of an acknowledged submit still answers with the same job.
  const json listed = api.GetJson("/v1/jobs?limit=1000");
  ASSERT_EQ(listed["items"].size(), ids.size());
  for (const json& j : listed["items"]) {
    EXPECT_EQ(j.value("idempotencyKey", ""), "restart-" + std::to_string(j["id"].get<int64_t>() - ids[0])) << j.dump();
  }
  auto replay = api.Post("/v1/jobs", R"j({"command":["true"],"resources":{"gpus":4},"timeLimit":"1h"})j",
                         "application/json", {{"Idempotency-Key", "restart-7"}});
  EXPECT_EQ(replay->status, 200);
  EXPECT_EQ(json::parse(replay->body)["id"], ids[7]);
  EXPECT_EQ(server.Stop(), 0) << server.log();
}

// With strictQueues a job must name a configured queue: a misspelt one
// would be a new queue outside every quota.
TEST(ApiQueues, StrictQueuesRefuseAnUnknownQueueByName) {
  ServerProcess server(std::string(kCluster) +
                       "queues:\n  - {name: research, limit: 8}\n  - {name: prod}\nstrictQueues: true\n");
  ASSERT_TRUE(server.Start()) << server.log();
  Api api(server.url());
  auto r = api.Post("/v1/jobs", R"j({"command":["true"],"queue":"reserch"})j");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  const json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["field"], "spec.queue");
  EXPECT_EQ(
      e["message"],
      "spec.queue: unknown queue \"reserch\"; did you mean \"research\"? (known: research, prod; strictQueues is on)");
  EXPECT_EQ(api.Post("/v1/jobs", R"j({"command":["true"]})j")->status, 400);  // "default" is not listed
  EXPECT_EQ(api.Post("/v1/jobs", R"j({"command":["true"],"queue":"research"})j")->status, 201);
  EXPECT_EQ(api.GetJson("/v1/jobs")["items"].size(), 1u);
}

// Nodes are listed by name (not in the order they were configured or
// registered), each with its condition; a static node has no last sync.
TEST(ApiNodes, ListedByNameWithTheirCondition) {
  ServerProcess server("nodes:\n  - {name: zeta, gpus: 8, gpuType: H100}\n  - {name: alpha, gpus: 8, gpuType: H100}\n");
  ASSERT_TRUE(server.Start()) << server.log();
  Api api(server.url());
  const json items = api.GetJson("/v1/nodes")["items"];
  ASSERT_EQ(items.size(), 2u) << items.dump();
  EXPECT_EQ(items[0]["name"], "alpha");
  EXPECT_EQ(items[1]["name"], "zeta");
  for (const json& n : items) {
    EXPECT_EQ(n["condition"], "Ready") << n.dump();
    EXPECT_FALSE(n.contains("lastSeen")) << n.dump();
    EXPECT_FALSE(n.contains("cordon")) << n.dump();
  }
}

// A restart puts each running job back on the GPU devices it holds. Here
// the later job holds the lower devices (the earlier one ended), so putting
// jobs back in id order on the lowest free devices would move both, and the
// next job would get a device a running job still uses.
TEST(ServerRestart, RunningJobsKeepTheirGpuDevices) {
  ServerProcess server("nodes:\n  - {name: a, gpus: 8, gpuType: H100}\n");
  ASSERT_TRUE(server.Start()) << server.log();
  Api api(server.url());
  auto submit = [&](int gpus) {
    auto r = api.Post("/v1/jobs",
                      R"j({"command":["true"],"timeLimit":"1h","resources":{"gpus":)j" + std::to_string(gpus) + "}}");
    EXPECT_EQ(r->status, 201) << r->body;
    const std::string id = json::parse(r->body)["id"].dump();
    WaitFor([&] { return api.GetJson("/v1/jobs/" + id)["state"] == "RUNNING"; }, std::chrono::seconds(10));
    return id;
  };
  auto devices = [&](const std::string& id) { return api.GetJson("/v1/jobs/" + id)["allocations"][0]["gpus"]; };
  const std::string first = submit(4);
  const std::string second = submit(2);
  ASSERT_EQ(api.Post("/v1/jobs/" + first + "/cancel", "")->status, 200);
  const std::string third = submit(4);
  ASSERT_EQ(devices(second), json::parse("[4,5]"));
  ASSERT_EQ(devices(third), json::parse("[0,1,2,3]"));
  server.Kill();
  ASSERT_TRUE(server.Start()) << server.log();
  EXPECT_EQ(devices(second), json::parse("[4,5]"));
  EXPECT_EQ(devices(third), json::parse("[0,1,2,3]"));
  EXPECT_EQ(devices(submit(2)), json::parse("[6,7]"));
}

// Decayed fair-share usage is kept in the store: after a restart a queue
// that used the cluster still ranks below one that did not.
// Nothing runs on a static node, but a job there still ends at its time
// limit, and its GPUs go to the next job.
TEST_F(ApiTest, AJobOnAStaticNodeEndsAtItsTimeLimit) {
  Api api(server_.url());
  auto r =
      api.Post("/v1/jobs", R"j({"command":["sleep","600"],"replicas":2,"resources":{"gpus":8},"timeLimit":"1s"})j");
  ASSERT_EQ(r->status, 201) << r->body;
  const std::string first = std::to_string(json::parse(r->body)["id"].get<int64_t>());
  r = api.Post("/v1/jobs", R"j({"command":["true"],"replicas":2,"resources":{"gpus":8},"timeLimit":"1h"})j");
  ASSERT_EQ(r->status, 201) << r->body;
  const std::string second = std::to_string(json::parse(r->body)["id"].get<int64_t>());
  json job;
  WaitFor(
      [&] {
        job = api.GetJson("/v1/jobs/" + first);
        return job["state"] == "TIMEOUT";
      },
      std::chrono::seconds(20));
  EXPECT_EQ(job["state"], "TIMEOUT") << job.dump();
  EXPECT_NE(job["reason"].get<std::string>().find("reached its time limit of 1s"), std::string::npos) << job.dump();
  WaitFor([&] { return api.GetJson("/v1/jobs/" + second)["state"] == "RUNNING"; }, std::chrono::seconds(20));
  // (That a job is not ended before its limit is control_loop_test's
  // ControlLoopAttempts.AJobPastItsTimeLimitIsStoppedAndEndsTimedOut.)
  EXPECT_EQ(api.GetJson("/v1/jobs/" + second)["state"], "RUNNING");
}

TEST(ServerStart, DamagedStoreStopsItWithTheFileName) {
  ServerProcess server(kCluster);
  ASSERT_TRUE(server.Start());
  server.Stop();
  const std::string db = server.dir() + "/muster.db";
  {
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(0);
    f << "this is not sqlite anymore, sorry about that";
  }
  EXPECT_FALSE(server.Start());
  EXPECT_NE(server.log().find(db), std::string::npos) << server.log();
}

// Deleting the -wal after a kill -9 lost the jobs acknowledged since the
// last checkpoint, and the restarted server handed their ids out again.
TEST(ServerStart, AStoreThatLostAcknowledgedJobsStopsIt) {
  ServerProcess server(kCluster);
  ASSERT_TRUE(server.Start());
  server.Stop();  // a clean stop: the store file holds everything so far
  ASSERT_TRUE(server.Start());
  Api api(server.url());
  std::string last;
  for (int i = 0; i < 3; ++i) {
    auto r = api.Post("/v1/jobs", R"({"command": ["true"], "resources": {"gpus": 1}})");
    ASSERT_TRUE(r && r->status == 201);
    last = json::parse(r->body)["id"].dump();
  }
  server.Kill();
  const std::string db = server.dir() + "/muster.db";
  std::filesystem::remove(db + "-wal");
  std::filesystem::remove(db + "-shm");
  EXPECT_FALSE(server.Start());
  EXPECT_NE(server.log().find("store " + db + " holds jobs up to 0, but job " + last + " was acknowledged"),
            std::string::npos)
      << server.log();
}

// Two servers on one store would each hand out the same job ids and
// overwrite each other's jobs: the second is refused and the first goes on.
TEST(ServerStart, ASecondServerOnTheSameStoreIsRefused) {
  ServerProcess first(kCluster);
  ASSERT_TRUE(first.Start());
  ServerProcess second;
  const std::string db = first.dir() + "/muster.db";
  std::ofstream(second.dir() + "/config.yaml") << "store: " << db << "\n" << kCluster;
  EXPECT_FALSE(second.Start());
  EXPECT_NE(second.log().find("store " + db + " is in use by another process (pid "), std::string::npos)
      << second.log();
  ::setenv("MUSTER_TOKEN", first.admin_token().c_str(), 1);  // the second's made its own
  Api api(first.url());
  auto r = api.Post("/v1/jobs", R"({"command": ["true"], "resources": {"gpus": 1}})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 201) << r->body;
  // Once the first is gone, the lock goes with it (kill -9 included).
  first.Kill();
  EXPECT_TRUE(second.Start()) << second.log();
}

TEST(ServerStart, StrictQueuesWithoutQueuesIsAClearError) {
  ServerProcess server("strictQueues: true\n");
  EXPECT_FALSE(server.Start());
  EXPECT_NE(server.log().find("server.strictQueues: needs the queues jobs may name, under queues"), std::string::npos)
      << server.log();
}

TEST(ServerStart, BadConfigurationIsAClearError) {
  ServerProcess server("scheduler: {maxReservatons: 3}\n");
  EXPECT_FALSE(server.Start());
  EXPECT_NE(server.log().find(
                "config.yaml: server.scheduler.maxReservatons: unknown field; did you mean \"maxReservations\"?"),
            std::string::npos)
      << server.log();
}

TEST(ServerStart, BadAgentTimingsAreClearErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"agents: {maxLostFraction: lots}\n",
       "server.agents.maxLostFraction: must be a number from 0 to 1, got \"lots\""},
      {"agents: {maxLostFraction: 1.5}\n", "server.agents.maxLostFraction: must be a number from 0 to 1"},
      {"agents: {lease: 60s, lostAfter: 30s}\n", "agents.lostAfter: must be longer than agents.lease"},
      {"agents: {unreachableAfter: 200s}\n",
       "agents.lostAfter: must be longer than agents.lease and agents.unreachableAfter"},
  };
  for (const auto& [config, message] : cases) {
    ServerProcess server(config);
    EXPECT_FALSE(server.Start()) << config;
    EXPECT_NE(server.log().find(message), std::string::npos) << config << server.log();
  }
}

}  // namespace
}  // namespace muster::testing
