#include "server/job_json.h"

#include <gtest/gtest.h>

#include "common/rfc3339.h"

namespace muster::server {
namespace {

store::JobRow Row() {
  store::JobRow r;
  r.id = 42;
  r.name = "train";
  r.user = "alice";
  r.queue = "default";
  r.state = "RUNNING";
  r.reason = "";
  r.submit_ms = 1764151200000;  // 2025-11-26T10:00:00Z
  r.spec_json = R"({"name":"train","replicas":2})";
  r.status_json = "{}";
  return r;
}

TEST(JobJsonText, SpecMembersThenStatusInAlphabeticalOrder) {
  store::JobRow r = Row();
  r.start_ms = r.submit_ms + 1500;
  r.attempts = 1;
  EXPECT_EQ(JobJsonText(r), R"({"name":"train","replicas":2,"attempts":1,"id":42,"reason":"",)"
                            R"("startTime":"2025-11-26T10:00:01.500Z","state":"RUNNING",)"
                            R"("submitTime":"2025-11-26T10:00:00Z","user":"alice"})");
}

TEST(JobJsonText, StatusDetailIsCopiedAndItsTimesFormatted) {
  store::JobRow r = Row();
  r.state = "PENDING";
  r.end_ms = r.submit_ms + 60000;
  r.status_json = R"({"allocations":[{"node":"n1","replicas":2}],"arrayFirstId":40,"arrayIndex":2,)"
                  R"("attempt":{"progress":{"step":10,"timeMs":1764151260000},"resumedFrom":"ckpt-3"},)"
                  R"("attemptHistory":[{"attempt":1,"startTime":1764151200000,"endTime":1764151230000},7],)"
                  R"("idempotencyKey":"k1","notBeforeMs":1764151290000,"requeues":1,"retries":2})";
  const nlohmann::json j = nlohmann::json::parse(JobJsonText(r));
  EXPECT_EQ(j["allocations"][0]["node"], "n1");
  EXPECT_EQ(j["arrayFirstId"], 40);
  EXPECT_EQ(j["arrayIndex"], 2);
  EXPECT_EQ(j["progress"], nlohmann::json::parse(R"({"step":10,"time":"2025-11-26T10:01:00Z"})"));
  EXPECT_EQ(j["resumedFrom"], "ckpt-3");
  EXPECT_EQ(j["attemptHistory"][0]["startTime"], "2025-11-26T10:00:00Z");
  EXPECT_EQ(j["attemptHistory"][0]["endTime"], "2025-11-26T10:00:30Z");
  EXPECT_EQ(j["attemptHistory"][1], 7);
  EXPECT_EQ(j["idempotencyKey"], "k1");
  EXPECT_EQ(j["notBefore"], "2025-11-26T10:01:30Z");
  EXPECT_EQ(j["requeues"], 1);
  EXPECT_EQ(j["retries"], 2);
  EXPECT_EQ(j["endTime"], "2025-11-26T10:01:00Z");
  EXPECT_FALSE(j.contains("attempt"));
  EXPECT_FALSE(j.contains("notBeforeMs"));
  // A backoff's end is shown only while the job waits for it.
  r.state = "RUNNING";
  EXPECT_FALSE(nlohmann::json::parse(JobJsonText(r)).contains("notBefore"));
}

TEST(JobJsonText, DamagedStoredTextStillGivesValidJson) {
  store::JobRow r = Row();
  r.reason = "bad \xff byte and \"quotes\"";
  r.status_json = "{not json";
  r.spec_json = "";
  const nlohmann::json j = nlohmann::json::parse(JobJsonText(r));
  EXPECT_EQ(j["id"], 42);
  EXPECT_EQ(j["reason"], "bad \xEF\xBF\xBD byte and \"quotes\"");
  r.spec_json = "{}";
  EXPECT_EQ(nlohmann::json::parse(JobJsonText(r))["user"], "alice");
}

}  // namespace
}  // namespace muster::server
