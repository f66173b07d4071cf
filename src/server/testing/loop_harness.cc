#include "server/testing/loop_harness.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "api/job_spec.h"
#include "checkpoint/manifest.h"
#include "store/sqlite/sqlite_store.h"

namespace muster::server::testing {

namespace {

// A directory of the test's own, on tmpfs where there is one.
std::string MakeTempDir() {
  const std::string base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : ::testing::TempDir();
  std::string tmpl = base + "/muster-loop-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return "";
  return tmpl;
}

}  // namespace

LoopHarness::LoopHarness(const std::string& config) : config_(config) {
  clock_.Set(Time::FromMillis(1'767'225'600'000));  // 2026-01-01T00:00:00Z
  dir_ = MakeTempDir();
  started_ = dir_.empty() ? Status(StatusCode::kInternal, "no temporary directory") : StartLoop();
  EXPECT_TRUE(started_.ok()) << started_.ToString();
}

LoopHarness::~LoopHarness() {
  loop_.reset();
  store_.reset();
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

Status LoopHarness::StartLoop() {
  // The loop keeps a reference to its options: a restart parses them anew
  // only once the old loop is gone.
  ASSIGN_OR_RETURN(options_, ParseServerOptions(config_, "test configuration"));
  options_.store_path = dir_ + "/muster.db";
  options_.cycle_delay = Duration::Zero();
  if (!store_) {
    ASSIGN_OR_RETURN(std::unique_ptr<store::SqliteStore> s, store::SqliteStore::Open(options_.store_path));
    store_ = std::move(s);
  }
  loop_ = std::make_unique<ControlLoop>(options_, clock_, *store_);
  loop_->SetJobTokenKey("test-job-token-key");
  loop_->SetMetrics(&metrics_);
  loop_->RunManually();
  RETURN_IF_ERROR(loop_->Start());
  Settle();
  return Status::Ok();
}

Status LoopHarness::Restart(const std::string& config) {
  loop_.reset();  // stops: what it wrote is durable
  if (!config.empty()) config_ = config;
  started_ = StartLoop();
  return started_;
}

void LoopHarness::Advance(Duration d, Duration step) {
  while (d > Duration::Zero()) {
    const Duration by = std::min(d, step);
    clock_.Advance(by);
    d = d - by;
    Settle();
    for (PlayedAgent* a : agents_) {
      if (a->silent()) continue;
      StatusOr<proto::SyncResponse> r = a->Sync();
      EXPECT_TRUE(r.ok()) << a->node() << ": " << r.status().ToString();
    }
  }
}

Identity LoopHarness::User(const std::string& name) {
  Identity who;
  who.user = name;
  who.via = "test";
  return who;
}

StatusOr<store::JobRow> LoopHarness::Submit(const std::string& spec, const std::string& user,
                                            const std::string& idempotency_key) {
  ASSIGN_OR_RETURN(api::JobSpec parsed, api::ParseJobSpec(spec, "application/yaml", options_.SpecDefaults()));
  ControlLoop::SubmitRequest r;
  r.spec_json = api::JobSpecToJson(parsed);
  r.fingerprint = checkpoint::Sha256Hex(r.spec_json);
  r.spec = std::move(parsed);
  r.user = user;
  r.idempotency_key = idempotency_key;
  using R = ControlLoop::SubmitResult;
  ASSIGN_OR_RETURN(R result, Await<R>([&](ControlLoop::Done<StatusOr<R>> done) { loop_->Submit(std::move(r), done); }));
  return result.job;
}

StatusOr<store::JobRow> LoopHarness::Act(int64_t id, ControlLoop::Action action, const Identity& who) {
  return Await<store::JobRow>(
      [&](ControlLoop::Done<StatusOr<store::JobRow>> done) { loop_->Act(id, action, who, done); });
}

StatusOr<ControlLoop::Explanation> LoopHarness::Explain(int64_t id) {
  using R = ControlLoop::Explanation;
  return Await<R>([&](ControlLoop::Done<StatusOr<R>> done) { loop_->Explain(id, done); });
}

StatusOr<std::vector<ControlLoop::NodeView>> LoopHarness::Nodes() {
  using R = std::vector<ControlLoop::NodeView>;
  return Await<R>([&](ControlLoop::Done<StatusOr<R>> done) { loop_->Nodes(done); });
}

StatusOr<ControlLoop::NodeView> LoopHarness::Node(const std::string& name) {
  ASSIGN_OR_RETURN(std::vector<ControlLoop::NodeView> nodes, Nodes());
  for (ControlLoop::NodeView& n : nodes) {
    if (n.spec.name == name) return std::move(n);
  }
  return NotFound("node " + name + " is not listed");
}

StatusOr<std::vector<ControlLoop::QueueView>> LoopHarness::Queues() {
  using R = std::vector<ControlLoop::QueueView>;
  return Await<R>([&](ControlLoop::Done<StatusOr<R>> done) { loop_->Queues(done); });
}

store::JobRow LoopHarness::Stored(int64_t id) {
  StatusOr<std::optional<store::JobRow>> row = store_->GetJob(id);
  EXPECT_TRUE(row.ok() && row->has_value()) << "job " << id << " is not in the store";
  return row.ok() && row->has_value() ? **row : store::JobRow{};
}

std::vector<std::string> LoopHarness::Events(int64_t id, bool with_reason) {
  std::vector<std::string> out;
  StatusOr<std::vector<store::EventRow>> events = store_->ListEvents(id, 0, 10'000);
  EXPECT_TRUE(events.ok()) << events.status().ToString();
  if (!events.ok()) return out;
  for (const store::EventRow& e : *events) out.push_back(with_reason ? e.type + "/" + e.reason : e.type);
  return out;
}

bool LoopHarness::HasEvent(int64_t id, const std::string& type) { return CountEvents(id, type) > 0; }

int LoopHarness::CountEvents(int64_t id, const std::string& type) {
  const std::vector<std::string> events = Events(id, type.find('/') != std::string::npos);
  return static_cast<int>(std::count(events.begin(), events.end(), type));
}

std::string LoopHarness::EventMessage(int64_t id, const std::string& type) {
  StatusOr<std::vector<store::EventRow>> events = store_->ListEvents(id, 0, 10'000);
  EXPECT_TRUE(events.ok()) << events.status().ToString();
  std::string message;
  for (const store::EventRow& e : events.ok() ? *events : std::vector<store::EventRow>{}) {
    if (e.type == type) message = e.message;
  }
  return message;
}

PlayedAgent::PlayedAgent(LoopHarness& h, std::string node, Options o)
    : h_(h), node_(std::move(node)), o_(std::move(o)) {
  h_.agents_.push_back(this);
}

PlayedAgent::~PlayedAgent() { std::erase(h_.agents_, this); }

StatusOr<proto::SyncResponse> PlayedAgent::Sync() {
  proto::SyncRequest r;
  r.node = node_;
  r.agent_id = "agent-" + node_;
  r.agent_version = "test";
  r.address = "10.0.0.1";
  r.gpu_type = o_.gpu_type;
  r.gpu_source = "fake";
  for (int i = 0; i < o_.gpus; ++i) {
    r.gpus.push_back(
        {i, node_ + "-GPU-" + std::to_string(i), "NVIDIA " + o_.gpu_type, int64_t{80} << 30, 0, 0, true, ""});
  }
  r.cpu_milli = o_.cpu_milli;
  r.memory_bytes = o_.memory_bytes;
  r.labels = o_.labels;
  r.features = o_.features;
  r.health_events = health_;
  // Time limits are the agent's to enforce: a task past its limit ends.
  const int64_t now = h_.clock().Now().millis();
  for (auto& [key, t] : tasks_) {
    const int64_t limit = t.assignment.time_limit_ms;
    if (t.report.running && limit > 0 && now >= t.report.start_ms + limit) End(t, -1, 15, false, "timeout");
  }
  for (const auto& [key, t] : tasks_) r.tasks.push_back(t.report);
  if (reclaim_in_ > Duration::Zero()) {
    r.reclaim_in_ms = reclaim_in_.millis();
    r.reclaim_source = "test";
  }
  r.report_seq = report_seq_;
  r.epoch = epoch_;
  r.version = version_;
  r.reports_version = version_;
  // Through the protocol's own encoding, both ways, as over the wire.
  ASSIGN_OR_RETURN(proto::SyncRequest parsed, proto::ParseSyncRequest(proto::ToJson(r)));
  auto request = std::make_shared<const proto::SyncRequest>(std::move(parsed));
  using R = ControlLoop::SyncResult;
  ASSIGN_OR_RETURN(R result, h_.Await<R>([&](ControlLoop::Done<StatusOr<R>> done) {
    h_.loop().AgentSync(request, ControlLoop::SyncPhase::kFull, done);
  }));
  ASSIGN_OR_RETURN(proto::SyncResponse answer, proto::ParseSyncResponse(proto::ToJson(result.response)));
  if (static_cast<size_t>(answer.health_events_recorded) >= health_.size()) health_.clear();
  Apply(answer);
  last_ = answer;
  return answer;
}

void PlayedAgent::Apply(const proto::SyncResponse& r) {
  if (r.epoch < epoch_) return;
  epoch_ = r.epoch;
  version_ = r.version;
  for (const proto::TaskRef& done : r.recorded) {
    auto it = tasks_.find(proto::TaskKey(done.job, done.attempt, done.replica));
    if (it != tasks_.end() && !it->second.report.running) tasks_.erase(it);
  }
  std::set<std::string> desired;
  for (const proto::TaskAssignment& a : r.tasks) {
    const std::string key = proto::TaskKey(a.job, a.attempt, a.replica);
    desired.insert(key);
    if (tasks_.count(key)) continue;
    Task t;
    t.assignment = a;
    t.report.job = a.job;
    t.report.attempt = a.attempt;
    t.report.replica = a.replica;
    t.report.start_ms = h_.clock().Now().millis();
    tasks_[key] = std::move(t);
    ++report_seq_;
  }
  if (hold_stops_) return;
  for (auto& [key, t] : tasks_) {
    if (t.report.running && !desired.count(key)) End(t, -1, 15, false, "stop");
  }
}

void PlayedAgent::End(Task& t, int32_t exit_code, int32_t signal, bool oom, const std::string& why) {
  t.report.running = false;
  t.report.exit_code = exit_code;
  t.report.signal = signal;
  t.report.oom = oom;
  t.report.stop_reason = why;
  t.report.end_ms = h_.clock().Now().millis();
  ++report_seq_;
}

std::vector<proto::TaskRef> PlayedAgent::Running() const {
  std::vector<proto::TaskRef> out;
  for (const auto& [key, t] : tasks_) {
    if (t.report.running) out.push_back({t.report.job, t.report.attempt, t.report.replica});
  }
  return out;
}

bool PlayedAgent::Runs(int64_t job) const {
  for (const auto& [key, t] : tasks_) {
    if (t.report.running && t.report.job == job) return true;
  }
  return false;
}

const proto::TaskAssignment* PlayedAgent::Assignment(int64_t job, int32_t replica) const {
  for (const auto& [key, t] : tasks_) {
    if (t.report.job == job && (replica < 0 || t.report.replica == replica)) return &t.assignment;
  }
  return nullptr;
}

void PlayedAgent::Exit(int64_t job, int32_t exit_code) {
  for (auto& [key, t] : tasks_) {
    if (t.report.running && t.report.job == job) End(t, exit_code, 0, false, "");
  }
}

void PlayedAgent::OutOfMemory(int64_t job) {
  for (auto& [key, t] : tasks_) {
    if (t.report.running && t.report.job == job) End(t, -1, 9, true, "");
  }
}

void PlayedAgent::ReportXid(int32_t index, int64_t xid, bool fatal) {
  health_.push_back({node_ + "-GPU-" + std::to_string(index), xid, "xid", fatal, h_.clock().Now().millis()});
  ++report_seq_;
}

}  // namespace muster::server::testing
