// Agent: what it watches beside its main loop: the GPUs' health events and
// utilization samples (NVML's or fake GPUs'), its metrics, and the cloud's
// notice that it reclaims the node (agent/reclaim_watcher.h).
#include <algorithm>
#include <chrono>

#include "agent/agent.h"
#include "agent/agent_metrics.h"
#include "common/log.h"
#include "gpu/fake_gpus.h"

namespace muster::agent {

void Agent::HealthLoop() {
  while (true) {
    {
      MutexLock lock(mu_);
      if (stop_) return;
    }
    auto e = nvml_->WaitEvent(Duration::Seconds(1), clock_.Now().millis());
    if (!e.ok()) {
      log::Warn("GPU health events unavailable: {}", e.status().ToString());
      return;
    }
    if (!e->has_value()) continue;
    const gpu::GpuHealthEvent& ev = **e;
    MutexLock lock(mu_);
    for (gpu::GpuDevice& g : inventory_.gpus) {
      if (g.uuid == ev.uuid && ev.fatal) {
        g.healthy = false;
        g.health = ev.kind == "xid" ? "XID " + std::to_string(ev.xid) : ev.kind;
      }
    }
    events_.push_back({++event_seq_, {ev.uuid, ev.xid, ev.kind, ev.fatal, ev.time_ms}});
    events_dirty_ = true;  // the main thread sends them now
    Wake();
  }
}

void Agent::ReclaimLoop() {
  MutexLock lock(mu_);
  bool failing = false;
  while (!stop_) {
    lock.Unlock();
    StatusOr<std::optional<ReclaimNotice>> notice = reclaim_watcher_->Check();
    lock.Lock();
    if (!notice.ok()) {
      if (!failing) log::Warn("reclaim notices: {} ({})", notice.status().ToString(), options_.reclaim_notice_url);
      failing = true;
    } else {
      if (failing) log::Info("reclaim notices: {} answers again", options_.reclaim_notice_url);
      failing = false;
      if (*notice && reclaim_.NoteCloud(**notice, clock_.Now())) {
        log::Warn("the cloud reclaims this node in {} s: {}",
                  std::max<int64_t>(0, ((*notice)->deadline - clock_.Now()).millis()) / 1000, (*notice)->source);
        events_dirty_ = true;  // the main thread tells the server now
        Wake();
      }
    }
    WaitUnlessStopped(lock, options_.reclaim_poll);
  }
}

void Agent::StopIfReclaimedAlone() {
  ReclaimNotice notice;
  Time seen;
  const Time now = clock_.Now();
  if (!reclaim_.StopAlone(now, &notice, &seen)) return;
  int stopped = 0;
  for (const TaskStatus& t : executor_->Tasks()) {
    if (!t.running || t.stopping) continue;
    const StopOrder order = StopOrderOf(t.key, 30'000);
    // "fenced": stopped by its agent cut off from the server (lifecycle/replica_exit.h).
    executor_->Stop(t.key, order.signal, Duration::Millis(reclaim_.CutGrace(order.grace_ms, now)), "fenced");
    ++stopped;
  }
  log::Warn(
      "the cloud reclaims this node in {} s and no answer of the server has acknowledged the notice in {} s: "
      "{} tasks stopped with their checkpoint signal",
      std::max<int64_t>(0, (notice.deadline - now).millis()) / 1000, (now - seen).millis() / 1000, stopped);
}

void Agent::SampleLoop() {
  MutexLock lock(mu_);
  while (!stop_) {
    lock.Unlock();
    auto samples = nvml_->Sample();  // a GPU in trouble can make NVML slow: never on the main loop
    lock.Lock();
    nvml_samples_ = samples.ok() ? std::move(*samples) : std::vector<gpu::GpuSample>{};
    WaitUnlessStopped(lock, Duration::Millis(kUtilizationSampleMs));
  }
}

std::vector<gpu::GpuSample> Agent::SampleGpus(const std::vector<gpu::GpuDevice>& gpus, const std::vector<bool>& busy) {
  if (nvml_) {
    MutexLock lock(mu_);
    return nvml_samples_;
  }
  if (!options_.fake_gpus.empty()) {
    gpu::GpuInventory fake;
    fake.gpus = gpus;
    return gpu::FakeSamples(fake, busy, clock_.Now().millis());
  }
  return {};
}

void Agent::SampleUtilization(int64_t now_ms) {
  if (now_ms - last_utilization_ms_ < kUtilizationSampleMs) return;
  last_utilization_ms_ = now_ms;
  std::vector<gpu::GpuDevice> gpus;
  {
    MutexLock lock(mu_);
    gpus = inventory_.gpus;
  }
  std::vector<bool> busy(gpus.size());
  std::vector<std::pair<std::string, const std::vector<int32_t>*>> running;
  std::vector<std::string> known;
  for (const TaskStatus& t : executor_->Tasks()) {
    known.push_back(t.key);
    auto a = assigned_.find(t.key);
    if (a == assigned_.end() || !t.running || a->second.gpus.empty()) continue;
    running.emplace_back(t.key, &a->second.gpus);
    for (int32_t g : a->second.gpus) {
      if (g >= 0 && static_cast<size_t>(g) < busy.size()) busy[g] = true;
    }
  }
  utilization_.Retain(known);
  if (running.empty()) return;
  const std::vector<gpu::GpuSample> samples = SampleGpus(gpus, busy);
  for (const auto& [key, devices] : running) utilization_.Add(key, *devices, samples);
}

std::string Agent::MetricsText() {
  AgentSnapshot s;
  std::vector<bool> busy;
  {
    MutexLock lock(mu_);
    s.gpus = inventory_.gpus;
    s.gpu_users = gpu_users_;
    s.tasks_running = tasks_running_;
    s.last_sync_unix_seconds = static_cast<double>(last_success_ms_) / 1000;
    s.syncs_failed = syncs_failed_;
  }
  // Sampled outside the lock: NVML may take a while.
  busy.resize(s.gpus.size());
  for (const auto& [index, user] : s.gpu_users) {
    if (index >= 0 && static_cast<size_t>(index) < busy.size()) busy[index] = true;
  }
  s.samples = SampleGpus(s.gpus, busy);
  return AgentMetricsText(s);
}

}  // namespace muster::agent
