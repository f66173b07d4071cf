// CheckpointJanitor: deletes checkpoints that retention dropped, on its own
// thread, so the control loop never waits for storage. Deletion is best
// effort: a failure is written to stderr (the catalog already says REMOVED,
// and storage.h's Remove never deletes a location that does not hold the
// committed manifest).
//
// Thread-safety: Remove() from any thread; the destructor finishes the
// queue.
#pragma once

#include <deque>
#include <string>
#include <thread>
#include <utility>

#include "common/mutex.h"

namespace muster::server {

class CheckpointJanitor {
 public:
  CheckpointJanitor();
  ~CheckpointJanitor();
  void Remove(std::string location, std::string manifest_sha256, int64_t job);

 private:
  void Run();
  Mutex mu_;
  CondVar cv_;
  struct Item {
    std::string location, manifest_sha256;
    int64_t job = 0;
  };
  std::deque<Item> queue_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace muster::server
