// ImagePulls: images an admin asked nodes to pull ahead of the jobs that
// will use them (`muster image pull`), and how each pull went.
//
// A pull is asked of a node, goes to its agent in each sync answer until
// the agent reports it pulled or failed (agent/image_puller.h), and is
// then kept with its outcome, for `muster image list`, until it is asked
// again. Kept in the store as one meta document ("imagePulls").
//
// Thread-safety: none; the control loop owns it.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "proto/agent_protocol.h"

namespace muster::server {

struct ImagePull {
  std::string node, image;
  std::string requested_by;
  int64_t requested_ms = 0;
  std::string state = "asked";  // asked, waiting, pulling, pulled, failed
  std::string message;          // why it failed
  int64_t ms = 0;               // how long the pull took
  bool Ended() const { return state == "pulled" || state == "failed"; }
};

class ImagePulls {
 public:
  static constexpr const char* kMetaKey = "imagePulls";

  Status Load(const std::string& text);  // "": none; DataLoss when damaged
  std::string Dump() const;

  // Asks `node` to pull `image` (again, if it was asked before).
  void Ask(const std::string& node, const std::string& image, const std::string& by, int64_t now_ms);
  // The images `node` should be pulling.
  std::vector<std::string> Wanted(const std::string& node) const;
  // Takes in what `node`'s agent says of its pulls; returns the pulls that
  // ended with this report.
  std::vector<ImagePull> Report(const std::string& node, const std::vector<proto::ImagePullReport>& reports);
  // Whether the agent's report lacks an image it should be pulling (its
  // sync is answered at once, with the list).
  bool Unheard(const std::string& node, const std::vector<proto::ImagePullReport>& reports) const;
  // Every pull, by node and image.
  std::vector<ImagePull> All() const;

 private:
  Status LoadEntries(const nlohmann::json& j);

  std::map<std::pair<std::string, std::string>, ImagePull> pulls_;
};

}  // namespace muster::server
