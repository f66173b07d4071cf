#include "step/step_wire.h"

#include <sys/wait.h>

#include "auth/token.h"

namespace muster::step {

using nlohmann::json;

json LaunchToJson(const LaunchRequest& r) {
  json tasks = json::array();
  for (const TaskPlace& t : r.tasks) tasks.push_back({t.id, t.local});
  return {{"step", r.step},
          {"argv", r.argv},
          {"cwd", r.cwd},
          {"env", r.env},
          {"node", r.node_index},
          {"tasks", tasks},
          {"gpusPerTask", r.gpus_per_task}};
}

StatusOr<LaunchRequest> LaunchFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("a launch request must be an object");
  LaunchRequest r;
  try {
    r.step = j.at("step").get<int32_t>();
    r.argv = j.at("argv").get<std::vector<std::string>>();
    r.cwd = j.at("cwd").get<std::string>();
    r.env = j.at("env").get<std::map<std::string, std::string>>();
    r.node_index = j.at("node").get<int32_t>();
    for (const json& t : j.at("tasks")) r.tasks.push_back({t.at(0).get<int32_t>(), t.at(1).get<int32_t>()});
    r.gpus_per_task = j.value("gpusPerTask", 0);
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("malformed launch request: ") + e.what());
  }
  if (r.argv.empty()) return InvalidArgument("argv: the command is empty");
  if (r.tasks.empty()) return InvalidArgument("tasks: no task for this node");
  return r;
}

std::string OutputFrame(int32_t task, std::string_view bytes) {
  std::string out(4, '\0');
  const uint32_t t = static_cast<uint32_t>(task);
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((t >> (24 - 8 * i)) & 0xff);
  out.append(bytes);
  return out;
}

bool ReadOutputFrame(std::string_view frame, int32_t& task, std::string_view& bytes) {
  if (frame.size() < 4) return false;
  uint32_t t = 0;
  for (int i = 0; i < 4; ++i) t = (t << 8) | static_cast<unsigned char>(frame[i]);
  task = static_cast<int32_t>(t);
  bytes = frame.substr(4);
  return true;
}

int EndpointPort(std::string_view endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= endpoint.size() || endpoint.size() - colon > 6) return 0;
  int port = 0;
  for (char c : endpoint.substr(colon + 1)) {
    if (c < '0' || c > '9') return 0;
    port = port * 10 + (c - '0');
  }
  return port > 0 && port < 65536 ? port : 0;
}

StatusOr<std::vector<StepHost>> ParseStepHosts(std::string_view text) {
  std::vector<StepHost> out;
  size_t at = 0;
  while (at <= text.size() && !text.empty()) {
    const size_t comma = text.find(',', at);
    const std::string_view item =
        text.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || EndpointPort(item.substr(eq + 1)) == 0) {
      return InvalidArgument(std::string(kStepHostsVariable) + ": \"" + std::string(item) + "\" is not node=host:port");
    }
    out.push_back({std::string(item.substr(0, eq)), std::string(item.substr(eq + 1))});
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  if (out.empty()) return InvalidArgument(std::string(kStepHostsVariable) + " is empty");
  return out;
}

std::string StepKey(std::string_view job_token) { return auth::HmacSha256Hex(job_token, "muster step channel v1"); }

int32_t StatusOfWait(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace muster::step
