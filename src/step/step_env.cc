#include "step/step_env.h"

#include <cstdlib>

namespace muster::step {

const std::vector<std::string_view>& NodeVariables() {
  static const std::vector<std::string_view> kNames = {"CUDA_VISIBLE_DEVICES",
                                                       "NVIDIA_VISIBLE_DEVICES",
                                                       "SLURM_GPUS_ON_NODE",
                                                       "MUSTER_NODE",
                                                       "MUSTER_REPLICA_INDEX",
                                                       "MUSTER_BIN",
                                                       "TMPDIR",
                                                       "SLURM_TOPOLOGY_ADDR",
                                                       "MUSTER_STEP_COUNTER_FD"};
  return kNames;
}

std::map<std::string, std::string> NodeEnvironment() {
  std::map<std::string, std::string> out;
  for (std::string_view name : NodeVariables()) {
    if (const char* v = std::getenv(std::string(name).c_str())) out[std::string(name)] = v;
  }
  return out;
}

namespace {

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (!s.empty()) {
    const size_t comma = s.find(',', at);
    out.push_back(s.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> TaskEnvironment(const LaunchRequest& step, const TaskPlace& task,
                                                   const std::map<std::string, std::string>& node) {
  std::map<std::string, std::string> env = step.env;
  for (std::string_view name : NodeVariables()) env.erase(std::string(name));
  for (const auto& [k, v] : node) env[k] = v;
  env["SLURM_PROCID"] = std::to_string(task.id);
  env["SLURM_LOCALID"] = std::to_string(task.local);
  env["SLURM_NODEID"] = std::to_string(step.node_index);
  if (auto n = node.find("MUSTER_NODE"); n != node.end()) env["SLURMD_NODENAME"] = n->second;
  std::string gtids;
  for (const TaskPlace& t : step.tasks) gtids += (gtids.empty() ? "" : ",") + std::to_string(t.id);
  env["SLURM_GTIDS"] = gtids;
  if (step.gpus_per_task > 0) {
    for (const char* name : {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"}) {
      auto v = env.find(name);
      if (v == env.end() || v->second == "void") continue;
      const std::vector<std::string> all = Split(v->second);
      std::string share;
      for (int32_t g = task.local * step.gpus_per_task;
           g < (task.local + 1) * step.gpus_per_task && g < static_cast<int32_t>(all.size()); ++g) {
        share += (share.empty() ? "" : ",") + all[static_cast<size_t>(g)];
      }
      v->second = share;
    }
  }
  return env;
}

}  // namespace muster::step
