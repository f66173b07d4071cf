#include "server/fair_share_ledger.h"

#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

namespace muster::server {

void FairShareLedger::Charge(Time now, const core::ClusterState& state, const PoolPrices& prices,
                             ServerMetrics* metrics) {
  for (int32_t q = fairshare_.named(); q < state.num_queues(); ++q) fairshare_.NameQueue(q, state.QueueName(q));
  fairshare_.Advance(now, state.GpusByQueue());
  if (metrics != nullptr) ChargeMetrics(now, state, prices, *metrics);
  shares_ = fairshare_.Shares(state.num_queues());
}

const std::vector<int64_t>& FairShareLedger::UpdatePoints(int32_t num_queues, const core::ClusterSnapshot& snap) {
  points_ = fairshare_.Points(num_queues, snap.quotas, core::SchedulableGpus(snap));
  return points_;
}

void FairShareLedger::ChargeMetrics(Time now, const core::ClusterState& state, const PoolPrices& prices,
                                    ServerMetrics& metrics) {
  if (last_charge_ != Time::Zero() && now > last_charge_) {
    const double seconds = static_cast<double>((now - last_charge_).millis()) / 1000;
    // GPUs held now, by node and queue: every running job's allocations
    // (those being stopped too: they hold their GPUs). Then each node's
    // pool is found once, not once per allocation.
    std::map<std::pair<core::NodeIndex, int32_t>, int64_t> by_node;
    for (const auto& [id, job] : state.running()) {
      for (const core::Allocation& a : job.allocations) {
        if (a.resources.gpus > 0) by_node[{a.node, job.queue}] += a.resources.gpus;
      }
    }
    std::map<std::tuple<int32_t, int32_t, std::string>, int64_t> held;  // queue, GPU type, pool
    core::NodeIndex last_node = -1;
    std::string pool;
    for (const auto& [key, gpus] : by_node) {
      const core::Node& node = state.nodes()[key.first];
      if (key.first != last_node) pool = prices.PoolOf(node.spec.features);
      last_node = key.first;
      held[{key.second, node.gpu_type, pool}] += gpus;
    }
    for (const auto& [key, gpus] : held) {
      const auto& [queue, type, in_pool] = key;
      const std::string& type_name = state.GpuTypeName(type);
      metrics.Charge(state.QueueName(queue), type_name, in_pool, static_cast<double>(gpus) * seconds,
                     prices.PerGpuHour(in_pool, type_name));
    }
  }
  last_charge_ = now;
}

store::WriteBatch FairShareLedger::Save(Time now, const core::ClusterState& state) {
  store::WriteBatch b;
  if (!fairshare_.enabled() || fairshare_.last() == Time::Zero()) return b;
  nlohmann::json usage = nlohmann::json::object();
  for (int32_t q = 0; q < state.num_queues(); ++q) {
    if (const double u = fairshare_.Usage(q); u > 0) usage[state.QueueName(q)] = u;
  }
  b.meta.emplace_back(kMetaKey, nlohmann::json{{"at", fairshare_.last().millis()}, {"usage", usage}}.dump());
  last_save_ = now;
  return b;
}

store::WriteBatch FairShareLedger::SaveIfDue(Time now, const core::ClusterState& state) {
  if (!fairshare_.enabled() || now - last_save_ < Duration::Seconds(10)) return {};
  return Save(now, state);
}

Status FairShareLedger::Restore(const std::optional<std::string>& saved, core::ClusterState& state, Time now) {
  if (!saved) return Status::Ok();
  const nlohmann::json j = nlohmann::json::parse(*saved, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("at") || !j["at"].is_number_integer() || !j.contains("usage") ||
      !j["usage"].is_object()) {
    return DataLoss(std::string("meta ") + kMetaKey + " is damaged: " + saved->substr(0, 200));
  }
  std::vector<std::pair<int32_t, double>> usage;
  for (const auto& [name, u] : j["usage"].items()) {
    if (u.is_number()) usage.emplace_back(state.QueueId(name), u.get<double>());
  }
  fairshare_.Restore(Time::FromMillis(j["at"].get<int64_t>()), usage);
  last_save_ = now;
  return Status::Ok();
}

}  // namespace muster::server
