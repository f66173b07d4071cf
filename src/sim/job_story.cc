#include "sim/job_story.h"

namespace muster::sim {

std::string EventLine(const std::string& type, const std::string& reason) {
  return reason.empty() ? type : type + " " + reason;
}

std::string AttemptLine(int number, const std::string& result, const std::string& reason,
                        const std::vector<std::pair<std::string, std::string>>& replicas) {
  std::string line = std::to_string(number) + " " + result;
  if (!reason.empty()) line += " " + reason;
  for (const auto& [node, end] : replicas) line += " | " + node + ": " + end;
  return line;
}

std::string FormatStories(const std::vector<JobStory>& stories) {
  std::string out;
  for (const JobStory& s : stories) {
    out += "job " + s.job + "\n";
    for (const std::string& e : s.events) out += "  event " + e + "\n";
    for (const std::string& a : s.attempts) out += "  attempt " + a + "\n";
    out += "  state " + s.state + "\n";
  }
  return out;
}

}  // namespace muster::sim
