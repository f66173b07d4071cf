#include "server/image_pulls.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace muster::server {

using nlohmann::json;

Status ImagePulls::Load(const std::string& text) {
  pulls_.clear();
  if (text.empty()) return Status::Ok();
  const json j = json::parse(text, nullptr, false);
  if (!j.is_array()) return DataLoss("meta imagePulls is damaged");
  // value() throws on a field of the wrong type: damaged too.
  try {
    return LoadEntries(j);
  } catch (const json::exception&) {
    pulls_.clear();
    return DataLoss("meta imagePulls has a field of the wrong type");
  }
}

Status ImagePulls::LoadEntries(const nlohmann::json& j) {
  for (const json& e : j) {
    if (!e.is_object() || !e.contains("node") || !e.contains("image")) return DataLoss("meta imagePulls is damaged");
    ImagePull p;
    p.node = e.value("node", "");
    p.image = e.value("image", "");
    p.requested_by = e.value("requestedBy", "");
    p.requested_ms = e.value("requestedMs", int64_t{0});
    p.state = e.value("state", "asked");
    p.message = e.value("message", "");
    p.ms = e.value("ms", int64_t{0});
    if (!p.Ended()) p.state = "asked";  // what the agent did meanwhile, it says again
    pulls_[{p.node, p.image}] = std::move(p);
  }
  return Status::Ok();
}

std::string ImagePulls::Dump() const {
  json out = json::array();
  for (const auto& [key, p] : pulls_) {
    out.push_back({{"node", p.node},
                   {"image", p.image},
                   {"requestedBy", p.requested_by},
                   {"requestedMs", p.requested_ms},
                   {"state", p.state},
                   {"message", p.message},
                   {"ms", p.ms}});
  }
  return out.dump();
}

void ImagePulls::Ask(const std::string& node, const std::string& image, const std::string& by, int64_t now_ms) {
  ImagePull& p = pulls_[{node, image}];
  p = ImagePull{};
  p.node = node;
  p.image = image;
  p.requested_by = by;
  p.requested_ms = now_ms;
}

std::vector<std::string> ImagePulls::Wanted(const std::string& node) const {
  std::vector<std::string> out;
  for (auto it = pulls_.lower_bound({node, ""}); it != pulls_.end() && it->first.first == node; ++it) {
    if (!it->second.Ended()) out.push_back(it->second.image);
  }
  return out;
}

std::vector<ImagePull> ImagePulls::Report(const std::string& node, const std::vector<proto::ImagePullReport>& reports) {
  std::vector<ImagePull> ended;
  for (const proto::ImagePullReport& r : reports) {
    auto it = pulls_.find({node, r.image});
    if (it == pulls_.end() || it->second.Ended()) continue;  // not asked, or told already
    ImagePull& p = it->second;
    if (r.state != "waiting" && r.state != "pulling" && r.state != "pulled" && r.state != "failed") continue;
    p.state = r.state;
    p.message = r.message.substr(0, 1024);
    p.ms = r.ms;
    if (p.Ended()) ended.push_back(p);
  }
  return ended;
}

bool ImagePulls::Unheard(const std::string& node, const std::vector<proto::ImagePullReport>& reports) const {
  for (const std::string& image : Wanted(node)) {
    const bool heard = std::any_of(reports.begin(), reports.end(), [&](const auto& r) { return r.image == image; });
    if (!heard) return true;
  }
  return false;
}

std::vector<ImagePull> ImagePulls::All() const {
  std::vector<ImagePull> out;
  for (const auto& [key, p] : pulls_) out.push_back(p);
  return out;
}

}  // namespace muster::server
