#include "proto/agent_protocol.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace muster::proto {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The fuzzer's seeds are full messages of each kind; their encoding is a
// fixed point (what the fuzzer checks for every input that parses).
TEST(AgentProtocol, FullMessagesRoundTrip) {
  const std::string dir = "fuzz/corpus/agent_protocol/";  // tests run in the source tree
  auto req = ParseSyncRequest(Read(dir + "request.json"));
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  EXPECT_EQ(req->node, "gpu-a1");
  ASSERT_EQ(req->tasks.size(), 2u);
  EXPECT_TRUE(req->tasks[1].oom);
  EXPECT_EQ(req->reclaim_in_ms, 118000);
  ASSERT_EQ(req->tasks[1].skipped.size(), 1u);
  EXPECT_EQ(ToJson(*ParseSyncRequest(ToJson(*req))), ToJson(*req));

  auto resp = ParseSyncResponse(Read(dir + "response.json"));
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  ASSERT_EQ(resp->tasks.size(), 1u);
  EXPECT_EQ(resp->tasks[0].argv.size(), 4u);
  EXPECT_EQ(resp->tasks[0].resume.size(), 1u);
  EXPECT_EQ(resp->reclaim_in_ms, 118000);
  ASSERT_EQ(resp->grace_cuts.size(), 1u);
  EXPECT_EQ(resp->grace_cuts[0].job, 44);
  EXPECT_EQ(resp->grace_cuts[0].attempt, 2);
  EXPECT_EQ(resp->grace_cuts[0].grace_ms, 1000);
  EXPECT_EQ(resp->tasks[0].limit_signal, 10);
  EXPECT_EQ(resp->tasks[0].limit_signal_before_ms, 90000);
  EXPECT_EQ(resp->tasks[0].limit_signal_to, "steps");
  ASSERT_EQ(resp->signals.size(), 1u);
  EXPECT_EQ(resp->signals[0].seq, 2);
  EXPECT_EQ(resp->signals[0].signal, 12);
  EXPECT_EQ(resp->signals[0].to, "batch");
  EXPECT_EQ(ToJson(*ParseSyncResponse(ToJson(*resp))), ToJson(*resp));

  auto resume = ParseResumeCandidates(Read(dir + "resume.json"));
  ASSERT_TRUE(resume.ok()) << resume.status().ToString();
  EXPECT_EQ(ToJson(*ParseResumeCandidates(ToJson(*resume))), ToJson(*resume));
}

// Found by agent_protocol_fuzz: the bad name was echoed raw, so a control
// character in it reached the server's log as is.
TEST(AgentProtocol, ABadNodeNameIsEchoedEscaped) {
  auto r = ParseSyncRequest(R"({"node":"gpu\u001b[2Jx\n"})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().field(), "node");
  for (unsigned char c : r.status().ToString()) EXPECT_GE(c, 0x20) << r.status().ToString();
  EXPECT_NE(r.status().message().find(R"(got "gpu\u001b[2Jx\n")"), std::string::npos) << r.status().message();
}

// Found by agent_protocol_fuzz once it ran in CI: a number past int64 in
// an integer list parsed as a float, and converting it was undefined.
TEST(AgentProtocol, IntegersOutOfTheirRangeAreErrors) {
  auto r = ParseSyncResponse(R"({"tasks":[{"job":1,"attempt":1,"replica":0,"gpus":[0,444444444444444444444444444]}]})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().ToString().find("gpus"), std::string::npos) << r.status().ToString();
  r = ParseSyncResponse(R"({"tasks":[{"job":1,"attempt":4294967296,"replica":0}]})");
  ASSERT_FALSE(r.ok()) << "an attempt past int32";
  EXPECT_TRUE(ParseSyncResponse(R"({"tasks":[{"job":1,"attempt":2,"replica":0,"gpus":[0,7]}]})").ok());
}

// A node's features are names the scheduler interns: a bounded list of
// plain words, refused otherwise with the entry named.
TEST(AgentProtocol, NodeFeaturesAreBoundedPlainNames) {
  auto r = ParseSyncRequest(R"({"node":"n1","features":["containers","gpu-containers"]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->features, (std::vector<std::string>{"containers", "gpu-containers"}));
  EXPECT_EQ(ParseSyncRequest(ToJson(*r))->features, r->features);
  r = ParseSyncRequest(R"({"node":"n1","features":["containers","has space"]})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "features[1]");
  EXPECT_EQ(ParseSyncRequest(R"({"node":"n1","features":"containers"})").status().field(), "features");
  std::string many = R"({"node":"n1","features":[)";
  for (int i = 0; i < 17; ++i) many += (i ? "," : "") + std::string("\"f") + std::to_string(i) + "\"";
  EXPECT_EQ(ParseSyncRequest(many + "]}").status().field(), "features");
}

}  // namespace
}  // namespace muster::proto
