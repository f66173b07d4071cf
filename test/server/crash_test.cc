// Crash safety: 8 clients submit 10,000 jobs with idempotency keys,
// retrying until acknowledged, while the server is killed with SIGKILL twice
// and restarted. Afterwards every acknowledged job is present exactly once,
// with the id it was acknowledged with, and no key produced two jobs.
#include <httplib.h>

#include <atomic>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "../wait_for.h"
#include "server_process.h"

namespace muster::testing {
namespace {

using nlohmann::json;

TEST(CrashSafety, Kill9DuringASubmitBurstLosesAndDuplicatesNothing) {
  constexpr int kClients = 8;
  constexpr int kPerClient = 1250;  // 10,000 submits
  ServerProcess server(R"(
nodeGroups:
  - {count: 2, gpus: 8, gpuType: H100}
rateLimit: {perSecond: 1000000, burst: 1000000}
)");
  ASSERT_TRUE(server.Start()) << server.log();
  const std::string url = server.url();  // restarts keep the port
  const std::string token = server.admin_token();

  std::mutex mu;
  std::map<std::string, int64_t> acked;  // key -> id, guarded by mu
  std::atomic<int> total_acked{0}, retries{0}, unexpected{0};
  std::atomic<bool> done{false};
  std::atomic<bool> abort_clients{false};
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      httplib::Client cli(url);
      cli.set_connection_timeout(1, 0);
      cli.set_read_timeout(10, 0);
      for (int k = 0; k < kPerClient && !abort_clients; ++k) {
        const std::string key = "c" + std::to_string(t) + "-" + std::to_string(k);
        const std::string body = R"({"command":["true"],"resources":{"gpus":1},"name":"c)" + std::to_string(t) + "k" +
                                 std::to_string(k) + "\"}";
        for (int attempt = 0; !abort_clients; ++attempt) {
          auto r =
              cli.Post("/v1/jobs", httplib::Headers{{"Idempotency-Key", key}, {"Authorization", "Bearer " + token}},
                       body, "application/json");
          if (r && (r->status == 201 || r->status == 200)) {
            const int64_t id = json::parse(r->body)["id"];
            std::lock_guard<std::mutex> lock(mu);
            acked[key] = id;
            ++total_acked;
            break;
          }
          if (r && r->status != 409 && r->status != 503) {
            ++unexpected;
            ADD_FAILURE() << "unexpected answer " << r->status << ": " << r->body;
            break;
          }
          ++retries;
          if (attempt > 2000) {
            ADD_FAILURE() << "key " << key << " never acknowledged";
            break;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      }
    });
  }
  int kills = 0;
  bool restarted = true;
  for (int threshold : {2500, 6000}) {
    WaitFor([&] { return total_acked >= threshold || unexpected != 0; }, std::chrono::seconds(120),
            std::chrono::milliseconds(1));
    server.Kill();  // kill -9, reaped
    ++kills;
    restarted = server.Start() && server.url() == url;
    if (!restarted) break;
  }
  if (!restarted) abort_clients = true;  // they would retry for a long time
  for (auto& c : clients) c.join();
  ASSERT_TRUE(restarted) << server.log();
  done = true;
  ASSERT_EQ(unexpected.load(), 0);
  ASSERT_EQ(kills, 2);
  EXPECT_GT(retries.load(), 0) << "the kills should have interrupted some submits";
  ASSERT_EQ(acked.size(), static_cast<size_t>(kClients * kPerClient));

  // Everything the store has, page by page.
  httplib::Client cli(url);
  std::map<std::string, std::vector<int64_t>> jobs_by_key;
  int64_t total = 0;
  std::string cont;
  while (true) {
    auto r = cli.Get("/v1/jobs?limit=1000" + (cont.empty() ? "" : "&continue=" + cont),
                     {{"Authorization", "Bearer " + token}});
    ASSERT_TRUE(r && r->status == 200);
    const json page = json::parse(r->body);
    for (const json& j : page["items"]) {
      ++total;
      ASSERT_TRUE(j.contains("idempotencyKey")) << j.dump();
      jobs_by_key[j["idempotencyKey"]].push_back(j["id"]);
    }
    cont = page["continue"];
    if (cont.empty()) break;
  }
  // Nothing unacknowledged appears twice: one job per key...
  for (const auto& [key, ids] : jobs_by_key)
    EXPECT_EQ(ids.size(), 1u) << "key " << key << " made " << ids.size() << " jobs";
  // ...and every acknowledged job is there, with its acknowledged id.
  for (const auto& [key, id] : acked) {
    auto it = jobs_by_key.find(key);
    ASSERT_NE(it, jobs_by_key.end()) << "acknowledged job " << id << " (key " << key << ") is lost";
    EXPECT_EQ(it->second.front(), id) << "key " << key;
  }
  EXPECT_EQ(total, kClients * kPerClient);
  std::printf("crash test: %d submits acknowledged, %d retries, %d kills\n", total_acked.load(), retries.load(), kills);
}

}  // namespace
}  // namespace muster::testing
