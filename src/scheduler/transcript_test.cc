// Transcript tests: small text files of commands and the decisions they must
// produce (test/transcripts/scheduler/*.txt), read by people in review.
//
// Format and rewriting: test/transcript_file.h. Commands:
//   config policy=P reservations=N starvation=DUR age-per-hour=N age-cap=N
//   node NAME gpus=N [type=T] [leaf=L] [spine=S] [cpus=C] [memory=M]
//   submit ID gpus=G [replicas=R] [type=T] [class=C] [limit=DUR] [scope=S]
//          [after=afterok:ID,afterany:ID] [hold] [begin=DUR] [queue=Q] [cpus=C] [memory=M]
//   advance DUR          moves the simulated clock
//   cycle                runs one scheduling cycle and applies its bindings and failures
//   finish ID [state=S]  ends a running job (default COMPLETED)
//   cordon NODE | uncordon NODE
//   priority ID          prints the priority breakdown of a pending job
// Run with MUSTER_REWRITE=1 to rewrite the expected parts from actual output.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/quantity.h"
#include "core/cluster_state.h"
#include "scheduler/scheduler.h"
#include "transcript_file.h"

namespace muster::scheduler {
namespace {

using core::JobId;

class Transcript {
 public:
  std::string Run(const std::string& command) {
    testing::TranscriptCommand c = testing::SplitCommand(command);
    const std::string& verb = c.verb;
    std::vector<std::string>& positional = c.positional;
    std::map<std::string, std::string>& kv = c.kv;
    auto status_out = [](const Status& s) { return s.ok() ? std::string("ok\n") : "error: " + s.ToString() + "\n"; };
    if (verb == "config") return status_out(Config(kv));
    if (verb == "node") return status_out(Node(positional, kv));
    if (verb == "submit") return status_out(Submit(positional, kv));
    if (verb == "advance") {
      auto d = ParseDuration(positional.at(0));
      if (!d.ok()) return status_out(d.status());
      now_ = now_ + *d;
      return "t=" + (now_ - Time::Zero()).ToString() + "\n";
    }
    if (verb == "cycle") return Cycle();
    if (verb == "finish") {
      const JobId id = std::stoll(positional.at(0));
      core::JobState st = core::JobState::kCompleted;
      if (kv.count("state")) {
        for (int s = 0; s <= static_cast<int>(core::JobState::kPreempted); ++s) {
          if (kv["state"] == core::JobStateName(static_cast<core::JobState>(s))) st = static_cast<core::JobState>(s);
        }
      }
      return status_out(state_.Finish(id, st, now_));
    }
    if (verb == "cordon" || verb == "uncordon") {
      return status_out(state_.SetSchedulable(nodes_.at(positional.at(0)), verb == "uncordon"));
    }
    if (verb == "priority") {
      const JobId id = std::stoll(positional.at(0));
      const core::ClusterSnapshot snap = state_.Snapshot(now_);
      for (const core::PendingJob& j : snap.pending) {
        if (j.id != id) continue;
        auto sched = Scheduler::Create(options_);
        const PriorityBreakdown b = (*sched)->Priority(j, snap);
        return "class " + std::to_string(b.class_points) + " + age " + std::to_string(b.age_points) + " + fairshare " +
               std::to_string(b.fairshare_points) + " + size " + std::to_string(b.size_points) + " = " +
               std::to_string(b.total()) + "\n";
      }
      return "not pending\n";
    }
    return "error: unknown command " + verb + "\n";
  }

 private:
  Status Config(std::map<std::string, std::string>& kv) {
    for (auto& [k, v] : kv) {
      if (k == "policy") {
        options_.policy = v;
      } else if (k == "reservations") {
        options_.max_reservations = std::stoi(v);
      } else if (k == "starvation") {
        ASSIGN_OR_RETURN(options_.starvation_threshold, ParseDuration(v));
      } else if (k == "age-per-hour") {
        options_.weights.age_points_per_hour = std::stoll(v);
      } else if (k == "age-cap") {
        options_.weights.age_cap = std::stoll(v);
      } else {
        return InvalidArgument("unknown config key", k);
      }
    }
    return Scheduler::Create(options_).status();
  }

  Status Node(const std::vector<std::string>& pos, std::map<std::string, std::string>& kv) {
    core::NodeSpec spec;
    spec.name = pos.at(0);
    spec.capacity.gpus = std::stoll(kv["gpus"]);
    spec.gpu_type = kv.count("type") ? kv["type"] : "H100";
    spec.topology.leaf = kv["leaf"];
    spec.topology.spine = kv["spine"];
    if (kv.count("cpus")) {
      ASSIGN_OR_RETURN(spec.capacity.cpu_milli, ParseCpuMilli(kv["cpus"]));
    }
    if (kv.count("memory")) {
      ASSIGN_OR_RETURN(spec.capacity.memory_bytes, ParseMemoryBytes(kv["memory"]));
    }
    ASSIGN_OR_RETURN(core::NodeIndex idx, state_.AddNode(spec));
    nodes_[spec.name] = idx;
    return Status::Ok();
  }

  Status Submit(const std::vector<std::string>& pos, std::map<std::string, std::string>& kv) {
    core::JobSpec spec;
    const JobId id = std::stoll(pos.at(0));
    spec.per_replica.gpus = std::stoll(kv["gpus"]);
    if (kv.count("replicas")) spec.replicas = std::stoi(kv["replicas"]);
    if (kv.count("type")) spec.gpu_type = kv["type"];
    if (kv.count("class")) spec.priority_class = kv["class"];
    if (kv.count("queue")) spec.queue = kv["queue"];
    if (kv.count("limit")) {
      ASSIGN_OR_RETURN(spec.time_limit, ParseDuration(kv["limit"]));
    }
    if (kv.count("cpus")) {
      ASSIGN_OR_RETURN(spec.per_replica.cpu_milli, ParseCpuMilli(kv["cpus"]));
    }
    if (kv.count("memory")) {
      ASSIGN_OR_RETURN(spec.per_replica.memory_bytes, ParseMemoryBytes(kv["memory"]));
    }
    if (kv.count("begin")) {
      ASSIGN_OR_RETURN(Duration d, ParseDuration(kv["begin"]));
      spec.begin_time = now_ + d;
    }
    if (kv.count("scope")) {
      const std::string& s = kv["scope"];
      spec.topology = s == "node"    ? core::TopologyScope::kNode
                      : s == "leaf"  ? core::TopologyScope::kLeaf
                      : s == "spine" ? core::TopologyScope::kSpine
                                     : core::TopologyScope::kAny;
    }
    if (kv.count("after")) {
      std::istringstream deps(kv["after"]);
      std::string d;
      // "a:1?b:2": any one is enough.
      const char separator = kv["after"].find('?') != std::string::npos ? '?' : ',';
      spec.dependencies_any = separator == '?';
      while (std::getline(deps, d, separator)) {
        const size_t colon = d.find(':');
        core::Dependency dep;
        const std::string type = d.substr(0, colon);
        dep.type = type == "afterany"     ? core::DependencyType::kAfterAny
                   : type == "afternotok" ? core::DependencyType::kAfterNotOk
                   : type == "after"      ? core::DependencyType::kAfter
                                          : core::DependencyType::kAfterOk;
        dep.job = std::stoll(d.substr(colon + 1));
        if (const size_t plus = d.find('+'); plus != std::string::npos) {  // after:ID+MINUTES
          dep.delay = Duration::Seconds(60 * std::stoll(d.substr(plus + 1)));
        }
        spec.dependencies.push_back(dep);
      }
    }
    for (const auto& p : pos) {
      if (p == "hold") spec.hold = true;
    }
    return state_.Submit(std::move(spec), now_, id).status();
  }

  std::string Allocs(const std::vector<core::Allocation>& allocs) const {
    std::string s;
    for (const core::Allocation& a : allocs) {
      s += " " + state_.nodes()[a.node].spec.name + "x" + std::to_string(a.replicas);
    }
    return s;
  }

  std::string Cycle() {
    auto sched = Scheduler::Create(options_);
    if (!sched.ok()) return "error: " + sched.status().ToString() + "\n";
    const core::Decisions d = (*sched)->Cycle(state_.Snapshot(now_));
    std::string out;
    for (const core::Binding& b : d.bindings)
      out += "bind " + std::to_string(b.job) + ":" + Allocs(b.allocations) + "\n";
    for (const core::Reservation& r : d.reservations) {
      out += "reserve " + std::to_string(r.job) + " at " + (r.start - Time::Zero()).ToString() + ":" +
             Allocs(r.allocations) + "\n";
    }
    for (const core::JobFailure& f : d.failures) out += "fail " + std::to_string(f.job) + ": " + f.reason + "\n";
    std::vector<core::PendingReason> reasons = d.reasons;
    std::sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.job < b.job; });
    for (const core::PendingReason& r : reasons) {
      out += "pending " + std::to_string(r.job) + ": " + core::FormatReason(r, state_.GpuTypeName(r.gpu_type), now_) +
             "\n";
    }
    // Apply, as the server would.
    for (const core::JobFailure& f : d.failures) {
      Status s = state_.EndPending(f.job, f.state, now_, f.reason);
      if (!s.ok()) out += "apply error: " + s.ToString() + "\n";
    }
    for (const core::Binding& b : d.bindings) {
      Status s = state_.Bind(b, now_);
      if (!s.ok()) out += "apply error: " + s.ToString() + "\n";
    }
    Status inv = state_.CheckInvariants();
    if (!inv.ok()) out += "INVARIANT: " + inv.ToString() + "\n";
    if (out.empty()) out = "(nothing)\n";
    return out;
  }

  core::ClusterState state_;
  SchedulerOptions options_;
  Time now_ = Time::Zero();
  std::map<std::string, core::NodeIndex> nodes_;
};

class TranscriptTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TranscriptTest, MatchesExpected) {
  Transcript t;
  testing::CheckTranscript(GetParam(), [&](const std::string& command) { return t.Run(command); });
}

INSTANTIATE_TEST_SUITE_P(Files, TranscriptTest,
                         ::testing::ValuesIn(testing::TranscriptFiles("test/transcripts/scheduler")),
                         [](const auto& p) { return testing::TranscriptName(p.param); });

}  // namespace
}  // namespace muster::scheduler
