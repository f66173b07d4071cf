// ImagePuller: an admin's pre-pulls on this node (`muster image pull`).
//
// The server's sync answers list the images this node should pull ahead of
// the jobs that will use them; the puller runs `podman pull` for each new
// one in the background (two at a time, each a child process whose output
// goes to a file under the state directory), and reports each image's
// state in the agent's syncs: pulling, pulled (with how long it took) or
// failed (with Podman's last words). An image the server no longer lists
// is forgotten once its pull has ended.
//
// Thread-safety: none; the agent's main thread owns it.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "proto/agent_protocol.h"

namespace muster::agent {

class ImagePuller {
 public:
  // `podman`: the command and its global options; `dir`: for the pulls' output.
  ImagePuller(std::vector<std::string> podman, std::string dir, const Clock& clock);
  ~ImagePuller();

  // The images the server wants on this node now.
  void Want(const std::vector<std::string>& images);
  // Reaps ended pulls and starts waiting ones.
  void Poll();
  // Each wanted (or still running) image's state, by image.
  std::vector<proto::ImagePullReport> Reports() const;

 private:
  struct Pull {
    std::string state;  // "waiting", "pulling", "pulled", "failed"
    std::string message;
    pid_t pid = 0;
    int64_t started_ms = 0, ms = 0;
    bool wanted = true;
  };
  std::string OutputPath(const std::string& image) const;
  void Start(const std::string& image, Pull& p);

  std::vector<std::string> podman_;
  std::string dir_;
  const Clock& clock_;
  std::map<std::string, Pull> pulls_;
};

}  // namespace muster::agent
