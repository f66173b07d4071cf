// Benchmark: the SQLite store's cost of a submit's rows, without HTTP or
// threads around it. Each batch is what a one-job submit writes (the job's
// row with its canonical spec, its Submitted event, its idempotency key);
// GROUP batches go in one commit, as the store writer groups concurrent
// submits. Prints the CPU (user + system) and wall time a job.
//
//   muster_bench_store [--dir DIR] [--jobs 20000] [--group 1,8,64]
//
// DIR (default /var/tmp/muster-store-bench) is emptied first; each group
// size gets a fresh store. Commits are durable (synchronous=FULL), so the
// wall time includes one fdatasync a commit.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "store/sqlite/sqlite_store.h"

namespace {

using muster::store::WriteBatch;

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// A submit of the API benchmark's job, as the server stores it.
WriteBatch Submit(int64_t id) {
  WriteBatch b;
  muster::store::JobRow j;
  j.id = id;
  j.name = "job";
  j.user = "bench";
  j.queue = "default";
  j.priority_class = "normal";
  j.state = "PENDING";
  j.reason = "Priority";
  j.submit_ms = 1'795'737'681'711 + id;
  j.spec_json =
      R"({"name":"job","queue":"default","priority":"normal","replicas":1,"array":null,"resources":{"gpus":1,)"
      R"("gpuType":null,"cpus":0,"memory":0},"command":["sleep","1"],"script":null,"image":null,"env":{},)"
      R"("workingDir":null,"timeLimit":"10m","topology":"any","stallTimeout":null,"checkpoint":null,"retry":)"
      R"({"limit":3,"backoff":{"initial":"30s","factor":2,"max":"10m"},"failOnExitCodes":[],"retryOnOom":false},)"
      R"("dependencies":[],"beginTime":null,"hold":false,"labels":{}})";
  const std::string key = "bench-1795737681235699974-" + std::to_string(id);
  j.status_json = R"({"idempotencyKey":")" + key + R"("})";
  b.jobs.push_back(std::move(j));
  b.events.push_back({0, id, 1'795'737'681'711 + id, "Submitted", "", "by bench"});
  b.idempotency.push_back(
      {"bench", key, "472198bcbb091a9005befc36fcc8e2a5a61fd6705c1c8116fb99cc553f4e64dc", id, 1'795'737'681'711 + id});
  return b;
}

int Run(const std::string& dir, int jobs, int group) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto store = muster::store::SqliteStore::Open(dir + "/muster.db");
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 1;
  }
  std::vector<WriteBatch> batches;
  batches.reserve(jobs);
  for (int i = 1; i <= jobs; ++i) batches.push_back(Submit(i));
  const double cpu0 = CpuSeconds();
  const auto wall0 = std::chrono::steady_clock::now();
  for (int i = 0; i < jobs; i += group) {
    std::vector<const WriteBatch*> commit;
    for (int k = i; k < std::min(jobs, i + group); ++k) commit.push_back(&batches[k]);
    if (muster::Status s = (*store)->Commit(commit); !s.ok()) {
      std::fprintf(stderr, "commit: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  const double cpu = CpuSeconds() - cpu0;
  std::printf("store: %d jobs, %d a commit: %.1f us of CPU a job, %.1f us wall a job (%.0f jobs/s)\n", jobs, group,
              cpu * 1e6 / jobs, wall * 1e6 / jobs, jobs / wall);
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string dir = "/var/tmp/muster-store-bench", groups = "1,8,64";
  int jobs = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir")
      dir = v;
    else if (k == "--jobs")
      jobs = std::max(1, std::stoi(v));
    else if (k == "--group")
      groups = v;
    else {
      std::fprintf(stderr, "usage: muster_bench_store [--dir DIR] [--jobs N] [--group 1,8,64]\n");
      return 2;
    }
  }
  std::stringstream list(groups);
  for (std::string g; std::getline(list, g, ',');) {
    if (int rc = Run(dir, jobs, std::max(1, std::stoi(g))); rc != 0) return rc;
  }
  return 0;
} catch (const std::exception& e) {  // a number that does not parse
  std::fprintf(stderr, "muster_bench_store: bad argument (%s)\n", e.what());
  return 2;
}
