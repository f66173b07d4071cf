#include "store/conformance_test.h"

#include <atomic>
#include <filesystem>
#include <thread>

#include "store/store_writer.h"

namespace muster::store {

void StoreConformance::SetUp() {
  static std::atomic<int> counter{0};
  dir_ = ::testing::TempDir() + "/muster_store_" + GetParam().name + "_" + std::to_string(::getpid()) + "_" +
         std::to_string(counter++);
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  store_ = Reopen();
  ASSERT_NE(store_, nullptr);
}

void StoreConformance::TearDown() {
  store_.reset();
  std::filesystem::remove_all(dir_);
}

std::unique_ptr<Store> StoreConformance::Reopen() {
  store_.reset();
  auto s = GetParam().open(dir_);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

JobRow TestJob(int64_t id, const std::string& state, const std::string& queue) {
  JobRow j;
  j.id = id;
  j.name = "job" + std::to_string(id);
  j.user = id % 2 ? "alice" : "bob";
  j.queue = queue;
  j.priority_class = "normal";
  j.state = state;
  j.submit_ms = 1000 + id;
  j.spec_json = R"({"command":["true"],"note":"it's \"quoted\" and ; DROP TABLE jobs; --"})";
  return j;
}

namespace {

Status CommitOne(Store& s, const WriteBatch& b) { return s.Commit({&b}); }

TEST_P(StoreConformance, JobRoundTripAndUpsert) {
  WriteBatch b;
  b.jobs.push_back(TestJob(1));
  ASSERT_TRUE(CommitOne(*store_, b).ok());
  auto got = store_->GetJob(1);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(**got, TestJob(1));

  JobRow running = TestJob(1, "RUNNING");
  running.start_ms = 5000;
  running.attempts = 1;
  running.status_json = R"({"nodes":["n1"]})";
  WriteBatch u;
  u.jobs.push_back(running);
  ASSERT_TRUE(CommitOne(*store_, u).ok());
  EXPECT_EQ(**store_->GetJob(1), running);
  EXPECT_FALSE(store_->GetJob(2)->has_value());

  // A reason-only update changes the reason and nothing else.
  WriteBatch r;
  r.reasons.emplace_back(1, "Resources");
  ASSERT_TRUE(CommitOne(*store_, r).ok());
  running.reason = "Resources";
  EXPECT_EQ(**store_->GetJob(1), running);
  EXPECT_EQ(*store_->CountJobs(), 1);
}

TEST_P(StoreConformance, EventsAreAppendedInOrder) {
  WriteBatch b;
  b.jobs.push_back(TestJob(7));
  b.events.push_back({0, 7, 10, "Submitted", "", "by alice"});
  b.events.push_back({0, 7, 20, "Started", "", "on n1"});
  b.events.push_back({0, 8, 20, "Submitted", "", ""});
  ASSERT_TRUE(CommitOne(*store_, b).ok());
  WriteBatch c;
  c.events.push_back({0, 7, 30, "Completed", "ExitCode0", ""});
  ASSERT_TRUE(CommitOne(*store_, c).ok());
  auto ev = store_->ListEvents(7, 0, 100);
  ASSERT_TRUE(ev.ok());
  ASSERT_EQ(ev->size(), 3u);
  EXPECT_EQ((*ev)[0].type, "Submitted");
  EXPECT_EQ((*ev)[2].type, "Completed");
  EXPECT_LT((*ev)[0].seq, (*ev)[1].seq);
  EXPECT_LT((*ev)[1].seq, (*ev)[2].seq);
  // Pages: after a seq, at most a limit.
  auto page = store_->ListEvents(7, (*ev)[0].seq, 1);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 1u);
  EXPECT_EQ((*page)[0].seq, (*ev)[1].seq);
  EXPECT_TRUE(store_->ListEvents(7, (*ev)[2].seq, 100)->empty());
  EXPECT_EQ((*ev)[1].message, "on n1");
}

TEST_P(StoreConformance, DuplicateIdempotencyKeyFailsTheWholeCommit) {
  WriteBatch first;
  first.jobs.push_back(TestJob(1));
  first.idempotency.push_back({"alice", "k1", "fp1", 1, 100});
  ASSERT_TRUE(CommitOne(*store_, first).ok());

  WriteBatch dup;
  dup.jobs.push_back(TestJob(2));
  dup.events.push_back({0, 2, 1, "Submitted", "", ""});
  dup.idempotency.push_back({"alice", "k1", "fp2", 2, 200});
  const Status s = CommitOne(*store_, dup);
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists) << s.ToString();
  // Atomic: nothing of the failed commit is visible.
  EXPECT_FALSE(store_->GetJob(2)->has_value());
  EXPECT_TRUE(store_->ListEvents(2, 0, 100)->empty());
  auto row = store_->GetIdempotency("alice", "k1");
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->fingerprint, "fp1");
  EXPECT_EQ((*row)->job_id, 1);
  // The same key for another principal is another key.
  WriteBatch other;
  other.idempotency.push_back({"bob", "k1", "fp3", 3, 300});
  EXPECT_TRUE(CommitOne(*store_, other).ok());
  EXPECT_EQ(store_->LoadIdempotency(150)->size(), 1u);
}

TEST_P(StoreConformance, ListJobsFiltersAndPages) {
  WriteBatch b;
  for (int64_t id = 1; id <= 25; ++id) {
    b.jobs.push_back(TestJob(id, id % 3 == 0 ? "RUNNING" : "PENDING", id <= 10 ? "q1" : "q2"));
  }
  ASSERT_TRUE(CommitOne(*store_, b).ok());
  // Pages of 10 over everything.
  std::vector<int64_t> seen;
  int64_t after = 0;
  for (int pages = 0; pages < 10; ++pages) {
    auto page = store_->ListJobs({}, after, 10);
    ASSERT_TRUE(page.ok());
    for (const JobRow& j : page->items) seen.push_back(j.id);
    if (page->next_after_id == 0) break;
    after = page->next_after_id;
  }
  ASSERT_EQ(seen.size(), 25u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<int64_t>(i + 1));
  // Filters combine.
  JobFilter f;
  f.states = {"RUNNING"};
  f.queue = "q2";
  auto page = store_->ListJobs(f, 0, 100);
  ASSERT_TRUE(page.ok());
  std::vector<int64_t> ids;
  for (const JobRow& j : page->items) ids.push_back(j.id);
  EXPECT_EQ(ids, (std::vector<int64_t>{12, 15, 18, 21, 24}));
  EXPECT_EQ(page->next_after_id, 0);
  f = {};
  f.user = "alice";
  f.name = "job7";
  EXPECT_EQ(store_->ListJobs(f, 0, 100)->items.size(), 1u);
  f.states = {"PENDING", "RUNNING"};
  f.name = "";
  EXPECT_EQ(store_->ListJobs(f, 0, 100)->items.size(), 13u);
}

// A window takes the jobs open at some time in it: not ended before its
// start, submitted before its end (accounting and history).
TEST_P(StoreConformance, ListJobsInATimeWindow) {
  WriteBatch b;
  auto job = [&](int64_t id, int64_t submit, std::optional<int64_t> end) {
    JobRow j = TestJob(id, end ? "COMPLETED" : "RUNNING", "q1");
    j.submit_ms = submit;
    j.end_ms = end;
    b.jobs.push_back(j);
  };
  job(1, 100, 200);            // ended before the window
  job(2, 100, 1000);           // ended at its start: open then
  job(3, 500, 1500);           // inside
  job(4, 1900, std::nullopt);  // still open, submitted inside
  job(5, 2000, std::nullopt);  // submitted at its end: not in it
  job(6, 100, std::nullopt);   // open all along
  ASSERT_TRUE(CommitOne(*store_, b).ok());
  JobFilter f;
  f.active_from_ms = 1000;
  f.submitted_before_ms = 2000;
  std::vector<int64_t> ids;
  const auto rows = store_->ListJobs(f, 0, 100);
  ASSERT_TRUE(rows.ok());
  for (const JobRow& j : rows->items) ids.push_back(j.id);
  EXPECT_EQ(ids, (std::vector<int64_t>{2, 3, 4, 6}));
  ids.clear();
  const auto summaries = store_->ListJobSummaries(f, 0, 100);
  ASSERT_TRUE(summaries.ok());
  for (const JobSummary& j : summaries->items) ids.push_back(j.id);
  EXPECT_EQ(ids, (std::vector<int64_t>{2, 3, 4, 6}));
  f.submitted_before_ms.reset();
  EXPECT_EQ(store_->ListJobs(f, 0, 100)->items.size(), 5u);
}

// Label selectors (kubectl's -l) over the spec's labels, in the store.
TEST_P(StoreConformance, ListJobsByLabels) {
  WriteBatch b;
  auto job = [&](int64_t id, const std::string& labels) {
    JobRow j = TestJob(id, "PENDING", "q1");
    j.spec_json = R"({"command":["x"],"labels":)" + labels + "}";
    b.jobs.push_back(j);
  };
  job(1, R"({"team":"vision","tier":"batch"})");
  job(2, R"({"team":"vision","it's\"odd\"":"x"})");
  job(3, R"({"team":"nlp"})");
  job(4, R"({})");
  ASSERT_TRUE(CommitOne(*store_, b).ok());
  auto ids = [&](const std::string& selector) {
    JobFilter f;
    auto parsed = ParseLabelSelector(selector, "labelSelector");
    EXPECT_TRUE(parsed.ok()) << selector;
    if (parsed.ok()) f.labels = *parsed;
    std::vector<int64_t> out, summary_ids;
    const auto rows = store_->ListJobs(f, 0, 100);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    if (rows.ok()) {
      for (const JobRow& j : rows->items) out.push_back(j.id);
    }
    const auto summaries = store_->ListJobSummaries(f, 0, 100);
    EXPECT_TRUE(summaries.ok());
    if (summaries.ok()) {
      for (const JobSummary& j : summaries->items) summary_ids.push_back(j.id);
    }
    EXPECT_EQ(out, summary_ids) << selector;
    return out;
  };
  EXPECT_EQ(ids("team=vision"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(ids("team==vision,tier=batch"), (std::vector<int64_t>{1}));
  EXPECT_EQ(ids("team!=vision"), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(ids("tier"), (std::vector<int64_t>{1}));
  EXPECT_EQ(ids("!team"), (std::vector<int64_t>{4}));
  EXPECT_EQ(ids("it's\"odd\""), (std::vector<int64_t>{2})) << "a key is data, not a JSON path";
  EXPECT_EQ(ids("team=nobody"), (std::vector<int64_t>{}));
}

// Newest first: pages go down the ids, filters as before.
TEST_P(StoreConformance, ListJobsNewestFirst) {
  WriteBatch b;
  for (int64_t id = 1; id <= 7; ++id) b.jobs.push_back(TestJob(id, id == 4 ? "RUNNING" : "PENDING", "q1"));
  ASSERT_TRUE(CommitOne(*store_, b).ok());
  JobFilter f;
  f.newest_first = true;
  std::vector<int64_t> ids;
  int64_t after = 0;
  for (int pages = 0; pages < 10; ++pages) {
    const auto page = store_->ListJobs(f, after, 3);
    ASSERT_TRUE(page.ok());
    for (const JobRow& j : page->items) ids.push_back(j.id);
    if (page->next_after_id == 0) break;
    after = page->next_after_id;
  }
  EXPECT_EQ(ids, (std::vector<int64_t>{7, 6, 5, 4, 3, 2, 1}));
  f.states = {"PENDING"};
  const auto summaries = store_->ListJobSummaries(f, 6, 2);
  ASSERT_TRUE(summaries.ok());
  ASSERT_EQ(summaries->items.size(), 2u);
  EXPECT_EQ(summaries->items[0].id, 5);
  EXPECT_EQ(summaries->items[1].id, 3);
  EXPECT_EQ(summaries->next_after_id, 3);
}

// Summaries list the same jobs and pages as ListJobs, with the spec's GPUs
// and replicas (an elastic job's most) and the nodes of the status's allocations.
TEST_P(StoreConformance, JobSummariesMatchTheRowsTheyList) {
  WriteBatch b;
  for (int64_t id = 1; id <= 12; ++id) {
    JobRow j = TestJob(id, id % 3 == 0 ? "RUNNING" : "PENDING", id <= 6 ? "q1" : "q2");
    j.reason = id % 3 == 0 ? "" : "Priority";
    // An elastic job's replicas are {min, max}: the summary has its max.
    const std::string replicas = std::to_string(1 + id % 2);
    j.spec_json = R"({"name":"job)" + std::to_string(id) + R"(","replicas":)" +
                  (id % 4 == 0 ? R"({"min":1,"max":)" + replicas + "}" : replicas) + R"(,"resources":{"gpus":)" +
                  std::to_string(id % 5) + R"(,"gpuType":null},"command":["gpus"]})";
    if (id % 3 == 0) {
      j.start_ms = 5000 + id;
      j.status_json = R"({"idempotencyKey":"k","allocations":[{"node":"n-)" + std::to_string(id) +
                      R"(","gpus":[0]},{"node":"n.b_2","gpus":[1]}]})";
    }
    b.jobs.push_back(j);
  }
  ASSERT_TRUE(CommitOne(*store_, b).ok());
  JobFilter f;
  f.queue = "q2";
  auto rows = store_->ListJobs(f, 0, 4);
  auto sums = store_->ListJobSummaries(f, 0, 4);
  ASSERT_TRUE(rows.ok() && sums.ok()) << sums.status().ToString();
  ASSERT_EQ(sums->items.size(), rows->items.size());
  EXPECT_EQ(sums->next_after_id, rows->next_after_id);
  EXPECT_EQ(sums->next_after_id, 10);
  for (size_t i = 0; i < rows->items.size(); ++i) {
    const JobRow& r = rows->items[i];
    const JobSummary& s = sums->items[i];
    EXPECT_EQ(s.id, r.id);
    EXPECT_EQ(s.name, r.name);
    EXPECT_EQ(s.user, r.user);
    EXPECT_EQ(s.queue, r.queue);
    EXPECT_EQ(s.priority_class, r.priority_class);
    EXPECT_EQ(s.state, r.state);
    EXPECT_EQ(s.reason, r.reason);
    EXPECT_EQ(s.submit_ms, r.submit_ms);
    EXPECT_EQ(s.start_ms, r.start_ms);
    EXPECT_EQ(s.end_ms, r.end_ms);
    EXPECT_EQ(s.gpus, r.id % 5);
    EXPECT_EQ(s.replicas, 1 + r.id % 2);
    if (r.id % 3 == 0) {
      EXPECT_EQ(s.nodes, (std::vector<std::string>{"n-" + std::to_string(r.id), "n.b_2"}));
    } else {
      EXPECT_TRUE(s.nodes.empty());
    }
  }
  // The next page goes on where ListJobs would.
  auto rest = store_->ListJobSummaries(f, sums->next_after_id, 4);
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->items.size(), 2u);
  EXPECT_EQ(rest->items[0].id, 11);
  EXPECT_EQ(rest->next_after_id, 0);
}

TEST_P(StoreConformance, LoadJobsCanSkipTerminalOnes) {
  WriteBatch b;
  b.jobs.push_back(TestJob(1));
  JobRow done = TestJob(2, "COMPLETED");
  done.end_ms = 9000;
  b.jobs.push_back(done);
  ASSERT_TRUE(CommitOne(*store_, b).ok());
  EXPECT_EQ(store_->LoadJobs(true)->size(), 2u);
  auto active = store_->LoadJobs(false);
  ASSERT_EQ(active->size(), 1u);
  EXPECT_EQ((*active)[0].id, 1);
  EXPECT_EQ(*store_->MaxJobId(), 2);
}

TEST_P(StoreConformance, NodesAndMeta) {
  WriteBatch b;
  b.nodes.push_back({"n1", R"({"gpus":8})", "IDLE", 1});
  b.meta.push_back({"epoch", "1"});
  ASSERT_TRUE(CommitOne(*store_, b).ok());
  WriteBatch c;
  c.nodes.push_back({"n1", R"({"gpus":8})", "DOWN", 2});
  c.nodes.push_back({"n0", R"({"gpus":4})", "IDLE", 2});
  c.meta.push_back({"epoch", "2"});
  ASSERT_TRUE(CommitOne(*store_, c).ok());
  auto nodes = store_->ListNodes();
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].name, "n0");
  EXPECT_EQ((*nodes)[1].state, "DOWN");
  EXPECT_EQ(store_->GetMeta("epoch")->value_or(""), "2");
  EXPECT_FALSE(store_->GetMeta("nope")->has_value());
  // A removed node is gone; removing one that is not there is no error.
  WriteBatch d;
  d.removed_nodes = {"n1", "never-there"};
  ASSERT_TRUE(CommitOne(*store_, d).ok());
  nodes = store_->ListNodes();
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].name, "n0");
}

TEST_P(StoreConformance, DataSurvivesReopen) {
  WriteBatch b;
  for (int64_t id = 1; id <= 100; ++id) b.jobs.push_back(TestJob(id));
  b.idempotency.push_back({"alice", "k", "fp", 1, 1});
  ASSERT_TRUE(CommitOne(*store_, b).ok());
  store_ = Reopen();
  ASSERT_NE(store_, nullptr);
  EXPECT_EQ(*store_->CountJobs(), 100);
  EXPECT_EQ(**store_->GetJob(42), TestJob(42));
  EXPECT_TRUE(store_->GetIdempotency("alice", "k")->has_value());
}

TEST_P(StoreConformance, GroupCommitFromManyThreadsLosesNothing) {
  constexpr int kThreads = 8, kPerThread = 250;
  std::atomic<int> ok{0}, failed{0};
  {
    StoreWriter writer(*store_);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          const int64_t id = int64_t{t} * kPerThread + i + 1;
          WriteBatch b;
          b.jobs.push_back(TestJob(id));
          b.events.push_back({0, id, id, "Submitted", "", ""});
          b.idempotency.push_back({"p", "key" + std::to_string(id % (kThreads * kPerThread - 10)), "f", id, id});
          writer.Submit(std::move(b), [&](const Status& s) { (s.ok() ? ok : failed)++; });
        }
      });
    }
    for (auto& th : threads) th.join();
    writer.Flush();
    EXPECT_GE(writer.stats().batches, static_cast<uint64_t>(kThreads * kPerThread));
    EXPECT_GT(writer.stats().largest_group, 1u) << "no batching happened";
  }
  // 10 keys are reused: exactly those 10 batches fail, alone.
  EXPECT_EQ(failed.load(), 10);
  EXPECT_EQ(ok.load(), kThreads * kPerThread - 10);
  EXPECT_EQ(*store_->CountJobs(), kThreads * kPerThread - 10);
}

TEST_P(StoreConformance, AWritersTicketReadsCommittedFromItsCallbackOn) {
  StoreWriter writer(*store_);
  std::atomic<int> seen_committed{0};
  uint64_t tickets[3];
  for (int i = 0; i < 3; ++i) {
    WriteBatch b;
    b.jobs.push_back(TestJob(i + 1));
    // The callback runs on the writer thread once the batch is durable
    // (maybe before Submit returns: tickets count from 1).
    tickets[i] = writer.Submit(std::move(b), [&, i](const Status& s) {
      if (s.ok() && writer.Committed(i + 1)) ++seen_committed;
    });
  }
  EXPECT_EQ(tickets[0], 1u);
  EXPECT_EQ(tickets[2], 3u);
  writer.Flush();
  EXPECT_EQ(seen_committed.load(), 3);
  EXPECT_TRUE(writer.Committed(tickets[2]));
  EXPECT_FALSE(writer.Committed(tickets[2] + 1));
}

TEST_P(StoreConformance, ReadersRunWhileWriting) {
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, errors{0};
  std::thread reader([&] {
    while (!done) {
      auto page = store_->ListJobs({}, 0, 50);
      if (!page.ok()) ++errors;
      ++reads;
    }
  });
  for (int64_t id = 1; id <= 300; ++id) {
    WriteBatch b;
    b.jobs.push_back(TestJob(id));
    ASSERT_TRUE(CommitOne(*store_, b).ok());
  }
  done = true;
  reader.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(*store_->CountJobs(), 300);
}

TEST_P(StoreConformance, CheckpointCatalog) {
  auto ckpt = [](int64_t job, int64_t seq, const std::string& state) {
    return CheckpointRow{job,
                         seq,
                         1,
                         seq * 100,
                         "/ckpt/j" + std::to_string(job) + "/s" + std::to_string(seq),
                         std::string(64, 'a'),
                         2,
                         4096,
                         state,
                         "",
                         1000 + seq};
  };
  WriteBatch b;
  b.jobs.push_back(TestJob(1, "RUNNING"));
  JobRow ended = TestJob(2, "COMPLETED");
  ended.end_ms = 9000;
  b.jobs.push_back(ended);
  b.checkpoints = {ckpt(1, 1, "COMMITTED"), ckpt(1, 2, "COMMITTED"), ckpt(2, 1, "COMMITTED")};
  ASSERT_TRUE(CommitOne(*store_, b).ok());
  WriteBatch update;  // upsert: one becomes corrupt, with a note
  CheckpointRow corrupt = ckpt(1, 2, "CORRUPT");
  corrupt.note = "model.pt does not match its SHA-256";
  update.checkpoints = {corrupt, ckpt(1, 3, "COMMITTED")};
  ASSERT_TRUE(CommitOne(*store_, update).ok());

  store_ = Reopen();
  auto all = store_->ListCheckpoints(1);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0], ckpt(1, 1, "COMMITTED"));
  EXPECT_EQ((*all)[1], corrupt);
  EXPECT_EQ((*all)[2].seq, 3);
  // Start-up loads the checkpoints of jobs that have not ended.
  auto live = store_->LoadLiveCheckpoints();
  ASSERT_TRUE(live.ok());
  ASSERT_EQ(live->size(), 3u);
  EXPECT_EQ((*live)[1], corrupt);
  EXPECT_EQ((*live)[2].seq, 3);
  EXPECT_TRUE(store_->ListCheckpoints(99)->empty());
}

TEST_P(StoreConformance, TokensUpsertAndAuditAppends) {
  TokenRow t{"0123456789abcdef", std::string(64, 'b'), "alice", "", "laptop", "root", 1000, 5000, 0};
  TokenRow node{"fedcba9876543210", std::string(64, 'c'), "", "n1", "agent", "root", 1000, 0, 0};
  WriteBatch b;
  b.tokens = {t, node};
  b.audit.push_back(
      {0, 1000, "root", "", "munge", "127.0.0.1", "token.create", "token/0123456789abcdef", "ok", "for alice"});
  ASSERT_TRUE(CommitOne(*store_, b).ok());
  WriteBatch revoke;  // a revocation rewrites the row; audit rows append in order
  TokenRow revoked = t;
  revoked.revoked_ms = 2000;
  revoke.tokens = {revoked};
  revoke.audit.push_back(
      {0, 2000, "root", "", "munge", "127.0.0.1", "token.revoke", "token/0123456789abcdef", "ok", ""});
  revoke.audit.push_back(
      {0, 2001, "mallory", "", "token 1111", "10.0.0.9", "cancel", "job/7", "Forbidden", "not hers"});
  ASSERT_TRUE(CommitOne(*store_, revoke).ok());

  store_ = Reopen();
  auto tokens = store_->ListTokens();
  ASSERT_TRUE(tokens.ok()) << tokens.status().ToString();
  ASSERT_EQ(tokens->size(), 2u);
  EXPECT_EQ((*tokens)[0], revoked);
  EXPECT_EQ((*tokens)[1], node);
  auto all = store_->ListAudit({}, 0, 10);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_LT((*all)[0].seq, (*all)[1].seq);
  EXPECT_EQ((*all)[2].actor, "mallory");
  EXPECT_EQ((*all)[2].outcome, "Forbidden");
  auto mallory = store_->ListAudit({"mallory", ""}, 0, 10);
  ASSERT_EQ(mallory->size(), 1u);
  EXPECT_EQ((*mallory)[0].object, "job/7");
  auto token = store_->ListAudit({"", "token/0123456789abcdef"}, (*all)[0].seq, 10);
  ASSERT_EQ(token->size(), 1u);
  EXPECT_EQ((*token)[0].action, "token.revoke");
  EXPECT_EQ(store_->ListAudit({}, 0, 1)->size(), 1u);
}

}  // namespace
}  // namespace muster::store
