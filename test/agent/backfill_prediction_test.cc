// End to end: a server planning backfill with its users' recent run times
// (scheduler.backfillBy: prediction, docs/scheduling.md "Backfill") keeps
// each user's history across a kill -9 and a restart, rebuilt from the
// stored jobs, and lets a job whose time limit would delay a reservation
// start before it when its user's recent jobs were short.
#include <gtest/gtest.h>

#include "../wait_for.h"
#include "cluster_fixture.h"

namespace muster::testing {
namespace {

using nlohmann::json;

class BackfillPredictionTest : public ClusterFixture {
 protected:
  BackfillPredictionTest()
      : ClusterFixture(R"(
rateLimit: {perSecond: 100000, burst: 100000}
scheduler: {backfillBy: prediction}
)") {}
};

TEST_F(BackfillPredictionTest, AShortUsersJobBackfillsByItsHistoryAfterARestart) {
  AddAgent({"--fake-gpus", "8xH100"});
  WaitNodes(1);
  // The user's last two jobs ran about a second each.
  for (int i = 0; i < 2; ++i) {
    const int64_t done = Submit("name: short\nresources: {gpus: 1}\ntimeLimit: 1h\ncommand: [sleep, '1']\n");
    ASSERT_EQ(WaitEnd(done)["state"], "COMPLETED");
  }
  // A holds half the node with a 10 h limit; B needs the whole node and is
  // promised it when A ends: at A's limit, once A has outlived its
  // one-second prediction.
  const int64_t a = Submit("name: a\nresources: {gpus: 4}\ntimeLimit: 10h\ncommand: [sleep, '600']\n");
  WaitState(a, "RUNNING");
  const int64_t b = Submit("name: b\nresources: {gpus: 8}\ntimeLimit: 1h\ncommand: [sleep, '1']\n");
  // A cycle has considered it (it has a reason), and it waits.
  ASSERT_TRUE(WaitFor([&] { return !Get("/v1/jobs/" + std::to_string(b)).value("reason", "").empty(); }));
  ASSERT_EQ(Get("/v1/jobs/" + std::to_string(b))["state"], "PENDING");

  server_.Kill();
  ASSERT_TRUE(server_.Start()) << server_.log();
  cli_ = std::make_unique<httplib::Client>(server_.url());
  cli_->set_read_timeout(30, 0);

  // D's 10 h limit ends after B's promised start, but its user's jobs ran
  // about a second: it is planned to end long before, and starts on the
  // four free GPUs. (Without the history it would wait behind B.)
  const int64_t d = Submit("name: d\nresources: {gpus: 4}\ntimeLimit: 10h\ncommand: [sleep, '600']\n");
  const json j = WaitState(d, "RUNNING", 30);
  EXPECT_EQ(j["state"], "RUNNING") << j.dump() << "\n" << Get("/v1/jobs/" + std::to_string(b)).dump();
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(b))["state"], "PENDING");
  CancelAndWait(d);
  CancelAndWait(a);
  EXPECT_EQ(WaitEnd(b)["state"], "COMPLETED");
}

}  // namespace
}  // namespace muster::testing
